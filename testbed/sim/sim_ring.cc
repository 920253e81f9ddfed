/* SPDX-License-Identifier: BSD-3-Clause */
/* The host library's software all-reduces in the simulator, over ns-3's
 * TCP (a reliable, congestion-controlled stream stands in for the
 * library's own UDP transport):
 *  - ring: hcl_ring.c's schedule (reduce-scatter then all-gather, 2(N - 1)
 *    steps, chunk c as hcl_ring_chunk cuts it) on hcl_chan.c's channels (a
 *    call of B bytes uses min(B / 1 MiB, ring_channels) rings, each on its
 *    part);
 *  - hier: hcl_hier.c's (a ring reduce-scatter inside the rack, a ring
 *    all-reduce of each shard among its holders across the racks, a ring
 *    all-gather inside the rack), racks of equal size.
 * Only timing is simulated: the bytes are ns-3's virtual payload and the
 * reduction is not computed. */
#include <stdexcept>

#include "sim.h"

extern "C" {
#include "hcl_chan.h" /* HCL_CHAN_MIN_BYTES */
#include "hcl_ring.h" /* hcl_ring_chunk */
}

using namespace ns3;

static const uint16_t PIPE_PORT = 50000; /* + the pipe's number on every host */

/* A rank's place in one ring: a stream to the next rank, one from the
 * previous, and a list of steps, each sending some bytes and waiting for
 * some from the previous rank before the next step goes. */
struct Pipe {
	Ptr<Socket> listen, to_next, from_prev;
	uint64_t rx_total = 0, rx_want = 0;		  /* bytes from prev: so far, and by the end of this step */
	std::vector<std::pair<uint64_t, uint64_t>> steps; /* (send, receive) bytes */
	size_t step = 0;
	bool busy = false;
	std::function<void()> on_done;
	std::string *error = nullptr;

	void Open(Ptr<Node> node, uint16_t port, std::string *err)
	{
		error = err;
		listen = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
		if (listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), port)) != 0)
			throw std::runtime_error("ring: port in use");
		listen->Listen();
		listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address &>(),
					  MakeCallback(&Pipe::Accepted, this));
		to_next = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
	}
	void Connect(uint32_t ip, uint16_t port) { to_next->Connect(InetSocketAddress(sim_ipv4(ip), port)); }
	void Accepted(Ptr<Socket> s, const Address &)
	{
		from_prev = s;
		s->SetRecvCallback(MakeCallback(&Pipe::Recv, this));
	}
	void Run(std::vector<std::pair<uint64_t, uint64_t>> st, std::function<void()> done)
	{
		steps = std::move(st);
		on_done = std::move(done);
		step = 0;
		busy = true;
		if (steps.empty()) {
			busy = false;
			Simulator::ScheduleNow(on_done);
			return;
		}
		SendStep();
		Advance(); /* the previous rank may be ahead */
	}
	void SendStep()
	{
		uint64_t b = steps[step].first;
		if (b && to_next->Send(Create<Packet>((uint32_t)b)) < 0 && error->empty())
			*error = "ring: the send buffer is full";
		rx_want += steps[step].second;
	}
	void Advance()
	{
		while (busy && rx_total >= rx_want) {
			if (++step == steps.size()) {
				busy = false;
				on_done();
				return;
			}
			SendStep();
		}
	}
	void Recv(Ptr<Socket> s)
	{
		Ptr<Packet> p;
		while ((p = s->Recv()))
			rx_total += p->GetSize();
		Advance();
	}
};

/* Bytes of chunk c when count elements are cut in n. */
static uint64_t chunk_bytes(size_t count, unsigned n, unsigned c)
{
	size_t off, len;
	hcl_ring_chunk(count, n, c, &off, &len);
	return (uint64_t)len * 4;
}

/* Rank i of an n-rank ring all-reduce of count elements: hcl_ring.c's
 * 2(n - 1) steps; with `gather` false only the reduce-scatter, with
 * `scatter` false only the all-gather. */
static std::vector<std::pair<uint64_t, uint64_t>> ring_steps(size_t count, unsigned n, unsigned i, bool scatter = true,
							     bool gather = true)
{
	std::vector<std::pair<uint64_t, uint64_t>> st;
	for (unsigned s = 0; scatter && s + 1 < n; s++)
		st.emplace_back(chunk_bytes(count, n, (i + n - s) % n), chunk_bytes(count, n, (i + 2 * n - s - 1) % n));
	for (unsigned s = 0; gather && s + 1 < n; s++)
		st.emplace_back(chunk_bytes(count, n, (i + 1 + n - s) % n), chunk_bytes(count, n, (i + n - s) % n));
	return st;
}

class RingRank : public SimAlgo
{
      public:
	RingRank(Ptr<Node> node, unsigned rank, unsigned world, const SimCfg &c)
	    : rank(rank), world(world), count(c.size / 4), pipes(c.ring_channels)
	{
		for (unsigned k = 0; k < pipes.size(); k++)
			pipes[k].Open(node, (uint16_t)(PIPE_PORT + k), &error);
	}
	void Connect(uint32_t next_ip)
	{
		for (unsigned k = 0; k < pipes.size(); k++)
			pipes[k].Connect(next_ip, (uint16_t)(PIPE_PORT + k));
	}
	void Start(std::function<void()> cb) override
	{
		done_cb = std::move(cb);
		size_t fit = count * 4 / HCL_CHAN_MIN_BYTES;
		unsigned use = fit < 1 ? 1 : fit < pipes.size() ? (unsigned)fit : (unsigned)pipes.size();
		running = use;
		for (unsigned k = 0; k < use; k++) {
			size_t off, len;
			hcl_ring_chunk(count, use, k, &off, &len);
			pipes[k].Run(ring_steps(len, world, rank), [this] {
				if (--running == 0)
					done_cb();
			});
		}
	}

      private:
	unsigned rank, world;
	size_t count;
	std::vector<Pipe> pipes;
	unsigned running = 0;
	std::function<void()> done_cb;
};

/* hier with R racks of g ranks: member i of rack r holds shard (i + 1) % g
 * after the rack's reduce-scatter, as every rack's member i does: the
 * ring of that shard is rack r's member i to rack r + 1's. */
class HierRank : public SimAlgo
{
      public:
	HierRank(Ptr<Node> node, unsigned rank, const SimCfg &c)
	    : g(c.hosts_per_rack), racks(c.racks), rack(rank / g), me(rank % g), count(c.size / 4)
	{
		in_rack.Open(node, PIPE_PORT + 10, &error);
		across.Open(node, PIPE_PORT + 11, &error);
	}
	void Connect(const SimNet &net)
	{
		in_rack.Connect(net.host_ip[rack * g + (me + 1) % g], PIPE_PORT + 10);
		across.Connect(net.host_ip[((rack + 1) % racks) * g + me], PIPE_PORT + 11);
	}
	void Start(std::function<void()> cb) override
	{
		done_cb = std::move(cb);
		in_rack.Run(ring_steps(count, g, me, true, false), [this] {
			size_t off, len;
			hcl_ring_chunk(count, g, (me + 1) % g, &off, &len);
			across.Run(racks > 1 ? ring_steps(len, racks, rack)
					     : std::vector<std::pair<uint64_t, uint64_t>>(),
				   [this] { in_rack.Run(ring_steps(count, g, me, false, true), done_cb); });
		});
	}

      private:
	unsigned g, racks, rack, me;
	size_t count;
	Pipe in_rack, across;
	std::function<void()> done_cb;
};

static void tcp_defaults()
{
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
}

static void check_size(const SimCfg &c)
{
	if (c.size % 4 || c.size == 0)
		throw std::runtime_error("size must be a positive multiple of 4");
}

SimAlgos sim_ring_create(const SimCfg &c, SimNet &net)
{
	check_size(c);
	if (c.ring_channels < 1 || c.ring_channels > 4)
		throw std::runtime_error("ring_channels must be 1..4");
	tcp_defaults();
	const unsigned world = c.hosts();
	SimAlgos out;
	for (unsigned i = 0; i < world; i++)
		out.emplace_back(new RingRank(net.hosts.Get(i), i, world, c));
	for (unsigned i = 0; i < world; i++)
		static_cast<RingRank *>(out[i].get())->Connect(net.host_ip[(i + 1) % world]);
	return out;
}

SimAlgos sim_hier_create(const SimCfg &c, SimNet &net)
{
	check_size(c);
	tcp_defaults();
	SimAlgos out;
	for (unsigned i = 0; i < c.hosts(); i++)
		out.emplace_back(new HierRank(net.hosts.Get(i), i, c));
	for (auto &r : out)
		static_cast<HierRank *>(r.get())->Connect(net);
	return out;
}
