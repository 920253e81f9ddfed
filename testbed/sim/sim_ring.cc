/* SPDX-License-Identifier: BSD-3-Clause */
/* The host library's ring in the simulator: hcl_ring.c's schedule
 * (reduce-scatter then all-gather, 2(N - 1) steps, chunk c of the buffer
 * as hcl_ring_chunk cuts it) on hcl_chan.c's channels (a call of B bytes
 * uses min(B / 1 MiB, ring_channels) rings, each on its part), over ns-3's
 * TCP: a reliable, congestion-controlled stream stands in for the
 * library's own UDP transport.  Only timing is simulated here: the bytes
 * are ns-3's virtual payload, the reduction is not computed. */
#include <stdexcept>

#include "sim.h"

extern "C" {
#include "hcl_chan.h" /* HCL_CHAN_MIN_BYTES */
#include "hcl_ring.h" /* hcl_ring_chunk */
}

using namespace ns3;

static const uint16_t RING_PORT = 50000;

class RingRank;

/* One channel of one rank: its stream to the next rank, the one from the
 * previous, and where this call's ring stands. */
struct RingChan {
	RingRank *rank;
	unsigned index;
	Ptr<Socket> listen, to_next, from_prev;
	uint64_t rx_total = 0, rx_want = 0; /* bytes from prev: so far, and by the end of this step */
	size_t off = 0, count = 0;	    /* this call's part, in elements */
	unsigned step = 0, steps = 0;
	bool busy = false;

	void Accepted(Ptr<Socket> s, const Address &)
	{
		from_prev = s;
		s->SetRecvCallback(MakeCallback(&RingChan::Recv, this));
	}
	void Recv(Ptr<Socket> s);
	void Begin(size_t part_off, size_t part_count);
	void SendStep();
	void Advance();
};

class RingRank : public SimAlgo
{
      public:
	RingRank(Ptr<Node> node, unsigned rank, unsigned world, const SimCfg &c)
	    : rank(rank), world(world), count(c.size / 4), chans(c.ring_channels)
	{
		for (unsigned k = 0; k < chans.size(); k++) {
			RingChan &ch = chans[k];
			ch.rank = this;
			ch.index = k;
			ch.listen = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
			if (ch.listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), (uint16_t)(RING_PORT + k))) != 0)
				throw std::runtime_error("ring: port in use");
			ch.listen->Listen();
			ch.listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address &>(),
						     MakeCallback(&RingChan::Accepted, &ch));
			ch.to_next = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
		}
	}
	/* After every rank listens: connect to the next. */
	void Connect(uint32_t next_ip)
	{
		for (unsigned k = 0; k < chans.size(); k++)
			chans[k].to_next->Connect(InetSocketAddress(sim_ipv4(next_ip), (uint16_t)(RING_PORT + k)));
	}

	void Start(std::function<void()> cb) override
	{
		done_cb = std::move(cb);
		size_t fit = count * 4 / HCL_CHAN_MIN_BYTES;
		unsigned use = fit < 1 ? 1 : fit < chans.size() ? (unsigned)fit : (unsigned)chans.size();
		running = use;
		for (unsigned k = 0; k < use; k++) {
			size_t off, len;
			hcl_ring_chunk(count, use, k, &off, &len);
			chans[k].Begin(off, len);
		}
	}
	void ChanDone()
	{
		if (--running == 0)
			done_cb();
	}

	const unsigned rank, world;

      private:
	size_t count;
	std::vector<RingChan> chans;
	unsigned running = 0;
	std::function<void()> done_cb;
};

/* Bytes of chunk c of this part (hcl_ring_chunk of the part's count). */
static uint64_t chunk_bytes(size_t count, unsigned world, unsigned c)
{
	size_t off, len;
	hcl_ring_chunk(count, world, c, &off, &len);
	return (uint64_t)len * 4;
}

void RingChan::Begin(size_t part_off, size_t part_count)
{
	off = part_off;
	count = part_count;
	step = 0;
	steps = 2 * (rank->world - 1);
	busy = true;
	SendStep();
	Advance(); /* the previous rank may be ahead */
}

/* Step s: reduce-scatter sends chunk i - s and gets chunk i - s - 1;
 * all-gather (s' = s - (N - 1)) sends chunk i + 1 - s' and gets i - s'. */
void RingChan::SendStep()
{
	const unsigned n = rank->world, i = rank->rank;
	unsigned send_c, recv_c;
	if (step < n - 1) {
		send_c = (i + n - step) % n;
		recv_c = (i + 2 * n - step - 1) % n;
	} else {
		unsigned s = step - (n - 1);
		send_c = (i + 1 + n - s) % n;
		recv_c = (i + n - s) % n;
	}
	uint64_t b = chunk_bytes(count, n, send_c);
	if (b && to_next->Send(Create<Packet>((uint32_t)b)) < 0)
		rank->error = "ring: the send buffer is full";
	rx_want += chunk_bytes(count, n, recv_c);
}

/* Every step whose chunk has come in full: the next one goes. */
void RingChan::Advance()
{
	while (busy && rx_total >= rx_want) {
		if (++step == steps) {
			busy = false;
			rank->ChanDone();
			return;
		}
		SendStep();
	}
}

void RingChan::Recv(Ptr<Socket> s)
{
	Ptr<Packet> p;
	while ((p = s->Recv()))
		rx_total += p->GetSize();
	Advance();
}

std::vector<SimAlgo *> sim_ring_create(const SimCfg &c, SimNet &net)
{
	const unsigned world = c.hosts();
	if (c.size % 4 || c.size == 0)
		throw std::runtime_error("size must be a positive multiple of 4");
	if (c.ring_channels < 1 || c.ring_channels > 4)
		throw std::runtime_error("ring_channels must be 1..4");
	Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(9000 - 52));
	Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(64u << 20));
	Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(8u << 20));
	/* Linux's floor of the retransmission timer (ns-3's default, RFC
	 * 6298's 1 s, made 1% loss cost 27x the clean time; 10 ms, the
	 * library's own transport's floor, fired spuriously behind the
	 * trial's 256K queues and doubled the clean 4 MiB time) */
	Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
	Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(100)));
	/* a delayed ACK (200 ms) at the end of every step would stall it:
	 * every segment is acknowledged, as the library's transport does */
	Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
	std::vector<RingRank *> ranks;
	for (unsigned i = 0; i < world; i++)
		ranks.push_back(new RingRank(net.hosts.Get(i), i, world, c));
	for (unsigned i = 0; i < world; i++)
		ranks[i]->Connect(net.host_ip[(i + 1) % world]);
	return std::vector<SimAlgo *>(ranks.begin(), ranks.end());
}
