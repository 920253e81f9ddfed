/* SPDX-License-Identifier: BSD-3-Clause */
/* The host library's software all-reduces in the simulator, over a model of
 * the library's own transfer (ring/hcl_xfer*): jumbo datagrams, a
 * congestion window (slow start, halving once per round trip on a loss,
 * back to one packet on a timeout), loss found by acknowledgements that
 * skip a packet three times, by the tail loss probe or by the timer (the
 * library's 10 ms floor), acknowledgements for every second packet and at
 * once on a gap or at a message's end, a step's send trailing into the
 * next (hcl_xfer_exchange_trailing: no step waits for its last ACK).  ns-3's TCP stood here before: it crashed at 64 hosts
 * (TcpRateLinux::SkbSent) and judged ring and hier by another transport than
 * the one they run on.
 *  - ring: hcl_ring.c's schedule (reduce-scatter then all-gather, 2(N - 1)
 *    steps, chunk c as hcl_ring_chunk cuts it) on hcl_chan.c's channels (a
 *    call of B bytes uses min(B / 1 MiB, ring_channels) rings, each on its
 *    part);
 *  - hier: hcl_hier.c's (a ring reduce-scatter inside the rack, a ring
 *    all-reduce of each shard among its holders across the racks, a ring
 *    all-gather inside the rack), racks of any sizes.
 * Only timing is simulated: the bytes are ns-3's virtual payload and the
 * reduction is not computed. */
#include <algorithm>
#include <deque>
#include <stdexcept>

#include <ns3/point-to-point-module.h>

#include "sim.h"

extern "C" {
#include "hcl_chan.h" /* HCL_CHAN_MIN_BYTES */
#include "hcl_ring.h" /* hcl_ring_chunk */
#include "hcl_xfer.h" /* HCL_XFER_INITIAL_CWND */
}

using namespace ns3;

static const uint16_t PIPE_PORT = 50000;	   /* + the pipe's number on every host */
static const uint32_t XFER_PAYLOAD = 8948;	   /* the library's: 24 + 8948 + 28 = a 9000-byte IP packet */
static const uint32_t XFER_WINDOW = 64;		   /* packets, the library's cap */
static const int64_t XFER_RTO_FLOOR_NS = 10000000; /* the library's timer floor */
static const int64_t XFER_RTO_MAX_NS = 100000000;

/* The transfer's 24-byte header, as much of it as the model reads. */
class XferHeader : public Header
{
      public:
	enum : uint8_t { DATA = 1, ACK = 2 };
	uint8_t type = DATA;
	uint8_t last = 0;  /* data: the last packet of a message (acknowledged at once) */
	uint32_t seq = 0;  /* data: the packet's number; ack: every packet before it arrived */
	uint64_t sack = 0; /* ack: bit i, packet seq + 1 + i arrived */
	static TypeId GetTypeId()
	{
		static TypeId t = TypeId("SwemuSimXferHeader").SetParent<Header>().AddConstructor<XferHeader>();
		return t;
	}
	TypeId GetInstanceTypeId() const override { return GetTypeId(); }
	uint32_t GetSerializedSize() const override { return 24; }
	void Serialize(Buffer::Iterator i) const override
	{
		i.WriteU8(type);
		i.WriteU8(last);
		i.WriteU16(0);
		i.WriteHtonU32(seq);
		i.WriteHtonU64(sack);
		i.WriteHtonU64(0);
	}
	uint32_t Deserialize(Buffer::Iterator i) override
	{
		type = i.ReadU8();
		last = i.ReadU8();
		i.Next(2);
		seq = i.ReadNtohU32();
		sack = i.ReadNtohU64();
		i.Next(8);
		return 24;
	}
	void Print(std::ostream &os) const override { os << "xfer " << (int)type << " " << seq; }
};

/* One direction of the library's transfer between two hosts: the sender's
 * window and timer, the receiver's in-order count and acknowledgements.
 * The sender sends `bytes` as one message (packets of XFER_PAYLOAD, the
 * last one shorter); the receiver reports each packet in order through
 * on_bytes. */
struct XferSender {
	struct Seg {
		uint32_t len;
		int64_t sent_at = 0;
		bool acked = false, lost = false, resent = false, last = false;
	};
	SimDatapath *dp = nullptr;
	uint16_t port = 0;			    /* ours */
	uint32_t to_ip = 0;			    /* the next rank's (network order) */
	uint16_t to_port = 0;
	std::deque<Seg> segs; /* snd_una onwards: sent, then not yet sent */
	uint32_t snd_una = 0, snd_nxt = 0;
	double cwnd = HCL_XFER_INITIAL_CWND, ssthresh = 1e9;
	uint32_t recover = 0; /* a loss of a packet sent before it is the same round trip's */
	bool in_recovery = false;
	int64_t srtt = 0, rttvar = 0, rto = XFER_RTO_FLOOR_NS, backoff = 1;
	EventId timer, wake, probe;
	int64_t last_sent = 0; /* of any data packet */
	bool tlp_done = false; /* this tail's loss probe went */
	/* the library's limit on its own data queued in the host (TCP Small
	 * Queues'): data waits while more than max(64 KiB, 1 ms at the host's
	 * rate) is in the host's NIC queue, or its ACKs and the peers' answers
	 * would wait behind a window of data (hcl_xfer_tx.c, local_queue_room) */
	Ptr<Queue<Packet>> nicq;
	uint64_t nic_bps = 0;

	void Enqueue(uint64_t bytes)
	{
		for (uint64_t b = bytes; b;) {
			uint32_t k = b < XFER_PAYLOAD ? (uint32_t)b : XFER_PAYLOAD;
			b -= k;
			Seg g;
			g.len = k;
			g.last = b == 0;
			segs.push_back(g);
		}
		Pump();
	}
	Seg &At(uint32_t seq) { return segs[seq - snd_una]; }
	void Emit(uint32_t seq)
	{
		Seg &g = At(seq);
		XferHeader h;
		h.type = XferHeader::DATA;
		h.seq = seq;
		h.last = g.last;
		Ptr<Packet> p = Create<Packet>(g.len);
		p->AddHeader(h);
		p->AddPacketTag(SimNotEctTag());
		g.sent_at = last_sent = Simulator::Now().GetNanoSeconds();
		dp->Send(0, port, to_ip, to_port, p); /* at once: the host's queue must show it to the next look */
		if (!timer.IsRunning())
			Arm();
		if (!probe.IsRunning() && srtt)
			probe = Simulator::Schedule(NanoSeconds(ProbeDelay()), &XferSender::TailProbe, this);
	}
	/* The library's tail loss probe (hcl_xfer_tx.c, tail_probe): when
	 * packets are out, none known lost, and the last went two round trips
	 * (and an ACK delay) ago, at least 1 ms, it goes again, once per tail:
	 * a lost last packet then costs a round trip, not the 10 ms timer. */
	int64_t ProbeDelay() const { return std::max<int64_t>(2 * srtt + 500000, 1000000); }
	void TailProbe()
	{
		const int64_t now = Simulator::Now().GetNanoSeconds(), due = last_sent + ProbeDelay();
		if (due > now) {
			probe = Simulator::Schedule(NanoSeconds(due - now), &XferSender::TailProbe, this);
			return;
		}
		if (tlp_done || snd_nxt == snd_una)
			return;
		for (uint32_t s = snd_una; s < snd_nxt; s++)
			if (At(s).lost)
				return;
		for (uint32_t s = snd_nxt; s-- > snd_una;)
			if (!At(s).acked) {
				At(s).lost = true;
				break;
			}
		tlp_done = true;
		Pump();
	}
	/* in flight: sent, neither acknowledged nor taken for lost */
	uint32_t InFlight()
	{
		uint32_t n = 0;
		for (uint32_t s = snd_una; s < snd_nxt; s++)
			n += !At(s).acked && !At(s).lost;
		return n;
	}
	/* What the window allows: packets taken for lost first, then new ones,
	 * while the host's queue has room. */
	void Pump()
	{
		const double win = std::min(cwnd, (double)XFER_WINDOW);
		const uint64_t limit = std::max<uint64_t>(64 << 10, nic_bps / 8000);
		for (uint32_t n = InFlight(); n < win; n++) {
			uint64_t q = nicq ? nicq->GetNBytes() : 0;
			if (q > limit) { /* again when about half of it will have left */
				if (!wake.IsRunning())
					wake = Simulator::Schedule(
						NanoSeconds(std::max<int64_t>(
							20000, (int64_t)((q - limit / 2) * 8e9 / nic_bps))),
						&XferSender::Pump, this);
				return;
			}
			uint32_t s = snd_una;
			while (s < snd_nxt && !At(s).lost)
				s++;
			if (s < snd_nxt) {
				At(s).lost = false;
				At(s).resent = true;
				Emit(s);
			} else if (snd_nxt - snd_una < segs.size()) {
				tlp_done = false; /* new data: a new tail */
				Emit(snd_nxt++);
			} else {
				return;
			}
		}
	}
	void Arm()
	{
		timer.Cancel();
		if (snd_nxt != snd_una)
			timer = Simulator::Schedule(NanoSeconds(std::min(rto * backoff, XFER_RTO_MAX_NS)),
						    &XferSender::Timeout, this);
	}
	/* Once per round trip: the window halves (the library's rule) */
	void Reduce()
	{
		if (in_recovery)
			return;
		ssthresh = std::max(cwnd / 2, 2.0);
		cwnd = ssthresh;
		recover = snd_nxt;
		in_recovery = true;
	}
	void Timeout()
	{
		if (snd_nxt == snd_una)
			return;
		ssthresh = std::max(cwnd / 2, 2.0);
		cwnd = 1;
		backoff = std::min<int64_t>(backoff * 2, 64);
		recover = snd_nxt;
		in_recovery = true;
		for (uint32_t s = snd_una; s < snd_nxt; s++) /* what the peer has not said it has */
			At(s).lost = !At(s).acked;
		Arm();
		Pump();
	}
	void Acked(const XferHeader &h)
	{
		const int64_t now = Simulator::Now().GetNanoSeconds();
		uint32_t newly = 0;
		auto take = [&](uint32_t s) {
			if (s < snd_una || s >= snd_nxt || At(s).acked)
				return;
			Seg &g = At(s);
			g.acked = true;
			g.lost = false;
			newly++;
			if (!g.resent) { /* Karn: no sample from a re-sent packet */
				int64_t r = now - g.sent_at;
				if (!srtt) {
					srtt = r;
					rttvar = r / 2;
				} else {
					rttvar = (3 * rttvar + std::llabs(srtt - r)) / 4;
					srtt = (7 * srtt + r) / 8;
				}
				rto = std::max(srtt + 4 * rttvar, XFER_RTO_FLOOR_NS);
			}
		};
		for (uint32_t s = snd_una; s < h.seq && s < snd_nxt; s++)
			take(s);
		uint32_t hi = h.seq;
		for (unsigned i = 0; i < 64; i++)
			if (h.sack >> i & 1) {
				take(h.seq + 1 + i);
				hi = h.seq + 2 + i;
			}
		while (snd_una < snd_nxt && segs.front().acked) {
			segs.pop_front();
			snd_una++;
		}
		if (in_recovery && snd_una >= recover)
			in_recovery = false;
		for (uint32_t k = 0; k < newly; k++)
			cwnd += cwnd < ssthresh ? 1 : 1 / cwnd;
		/* three packets after a hole arrived: it is lost (the library's RACK
		 * in its simplest form); a re-sent one waits for the timer */
		for (uint32_t s = snd_una; s + 3 < hi && s < snd_nxt; s++)
			if (!At(s).acked && !At(s).lost && !At(s).resent) {
				At(s).lost = true;
				Reduce();
			}
		if (newly) {
			backoff = 1;
			Arm();
		}
		Pump();
	}
};

struct XferReceiver {
	SimDatapath *dp = nullptr;
	uint16_t port = 0;
	uint32_t cum = 0;		    /* every packet before it arrived */
	std::map<uint32_t, uint32_t> ahead; /* arrived after a hole: seq -> bytes */
	unsigned unacked = 0;

	/* The bytes that became in order with this packet (0 for a copy or one
	 * after a hole). */
	uint64_t Take(const XferHeader &h, uint32_t len, uint32_t from_ip, uint16_t from_port)
	{
		uint64_t in_order = 0;
		bool now = h.last || h.seq != cum;
		if (h.seq >= cum && !ahead.count(h.seq)) {
			ahead[h.seq] = len;
			for (auto it = ahead.begin(); it != ahead.end() && it->first == cum; it = ahead.erase(it)) {
				in_order += it->second;
				cum++;
			}
		}
		if (now || ++unacked >= 2)
			Ack(from_ip, from_port);
		return in_order;
	}
	void Ack(uint32_t to_ip, uint16_t to_port)
	{
		XferHeader a;
		a.type = XferHeader::ACK;
		a.seq = cum;
		for (auto &[s, len] : ahead)
			if (s > cum && s - cum - 1 < 64)
				a.sack |= 1ull << (s - cum - 1);
		Ptr<Packet> p = Create<Packet>(0);
		p->AddHeader(a);
		p->AddPacketTag(SimNotEctTag());
		dp->Send(0, port, to_ip, to_port, p);
		unacked = 0;
	}
};

/* A rank's place in one ring: a stream to the next rank, one from the
 * previous, on one UDP port, and a list of steps, each sending some bytes
 * and waiting for some from the previous rank before the next step goes. */
struct Pipe {
	XferSender tx;
	XferReceiver rx;
	uint64_t rx_total = 0, rx_want = 0;		  /* bytes from prev: so far, and by the end of this step */
	std::vector<std::pair<uint64_t, uint64_t>> steps; /* (send, receive) bytes */
	size_t step = 0;
	bool busy = false;
	std::function<void()> on_done;
	std::string *error = nullptr;
	SimNet *net = nullptr;

	void Open(SimNet &n, Ptr<Node> node, uint16_t port, uint64_t host_bps, std::string *err)
	{
		net = &n;
		error = err;
		SimDatapath *dp = n.DatapathOf(node);
		dp->Bind(0, port, [this](Ptr<Packet> p, uint32_t ip, uint16_t from) { Recv(p, ip, from); });
		tx.dp = rx.dp = dp;
		tx.port = rx.port = port;
		Ptr<PointToPointNetDevice> nic = DynamicCast<PointToPointNetDevice>(dp->Nic());
		if (nic) {
			tx.nicq = nic->GetQueue();
			tx.nic_bps = host_bps;
		}
	}
	void Connect(uint32_t ip, uint16_t port)
	{
		tx.to_ip = ip;
		tx.to_port = port;
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
		if (steps[step].first)
			tx.Enqueue(steps[step].first);
		rx_want += steps[step].second;
	}
	/* The next step goes once its data from prev is in, the send's ACKs
	 * still due (the library's trailing sends); the call ends when the
	 * last send is acknowledged too (its drain: the caller's buffer). */
	void Advance()
	{
		while (busy && rx_total >= rx_want) {
			if (step + 1 == steps.size()) {
				if (!tx.segs.empty())
					return; /* an ACK calls again */
				busy = false;
				on_done();
				return;
			}
			step++;
			SendStep();
		}
	}
	void Recv(Ptr<Packet> p, uint32_t ip, uint16_t from)
	{
		sim_host_rx(*net, tx.dp->GetNode(), [this, p, ip, from] { Handle(p, ip, from); }, [this] { Advance(); });
		Advance();
	}
	void Handle(Ptr<Packet> p, uint32_t ip, uint16_t from)
	{
		XferHeader h;
		p->RemoveHeader(h);
		if (h.type == XferHeader::ACK)
			tx.Acked(h);
		else
			rx_total += rx.Take(h, p->GetSize(), ip, from);
	}
};

/* Bytes of chunk c when count elements are cut in n. */
static uint64_t chunk_bytes(size_t count, unsigned n, unsigned c)
{
	size_t off, len;
	hcl_ring_chunk(count, n, c, &off, &len);
	return (uint64_t)len * 4;
}

/* Rank i of a ring all-reduce over chunks of these bytes (n = chunks):
 * hcl_ring.c's 2(n - 1) steps; with `gather` false only the
 * reduce-scatter, with `scatter` false only the all-gather. */
static std::vector<std::pair<uint64_t, uint64_t>> ring_steps_of(const std::vector<uint64_t> &chunk, unsigned i,
								bool scatter, bool gather)
{
	const unsigned n = (unsigned)chunk.size();
	std::vector<std::pair<uint64_t, uint64_t>> st;
	for (unsigned s = 0; scatter && s + 1 < n; s++)
		st.emplace_back(chunk[(i + n - s) % n], chunk[(i + 2 * n - s - 1) % n]);
	for (unsigned s = 0; gather && s + 1 < n; s++)
		st.emplace_back(chunk[(i + 1 + n - s) % n], chunk[(i + n - s) % n]);
	return st;
}

/* ... of count elements cut as hcl_ring_chunk cuts them in n. */
static std::vector<std::pair<uint64_t, uint64_t>> ring_steps(size_t count, unsigned n, unsigned i)
{
	std::vector<uint64_t> chunk(n);
	for (unsigned c = 0; c < n; c++)
		chunk[c] = chunk_bytes(count, n, c);
	return ring_steps_of(chunk, i, true, true);
}

class RingRank : public SimAlgo
{
      public:
	RingRank(SimNet &net, Ptr<Node> node, unsigned rank, unsigned world, const SimCfg &c)
	    : rank(rank), world(world), count(c.size / 4), pipes(c.ring_channels)
	{
		for (unsigned k = 0; k < pipes.size(); k++)
			pipes[k].Open(net, node, (uint16_t)(PIPE_PORT + k), c.host_rate, &error);
	}
	void Connect(uint32_t next_ip)
	{
		for (unsigned k = 0; k < pipes.size(); k++)
			pipes[k].Connect(next_ip, (uint16_t)(PIPE_PORT + k));
	}
	void Start(size_t bytes, std::function<void()> cb) override
	{
		done_cb = std::move(cb);
		count = bytes / 4;
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

/* hier as hcl_hier.c runs it: the buffer cut in K shards, K the largest
 * rack's size; in a rack of g, part p is its shards j with j % g == p, and
 * the rack's ring reduce-scatter and all-gather move parts.  Member i then
 * holds part (i + 1) % g, and runs, for each of its shards in increasing j,
 * a ring all-reduce among the shard's holders (rack r's to rack r + 1's;
 * in a rack of g the holder of j is member (j % g + g - 1) % g), one pipe
 * per shard.  With racks of one size a member holds one shard, a part is
 * that shard, and the rack rings cut as the flat ring does. */
class HierRank : public SimAlgo
{
      public:
	HierRank(SimNet &net, Ptr<Node> node, unsigned rank, const SimCfg &c)
	    : racks(c.racks), rack(c.RackOf(rank)), me(rank - c.RackFirst(rack)), g(c.RackSize(rack)),
	      count(c.size / 4)
	{
		for (unsigned r = 0, f = 0; r < racks; f += size.back(), r++) {
			first.push_back(f);
			size.push_back(c.RackSize(r));
			kmax = std::max(kmax, size.back());
		}
		for (unsigned j = (me + 1) % g; racks > 1 && j < kmax; j += g)
			held.push_back(j);
		across = std::vector<Pipe>(held.size());
		in_rack.Open(net, node, PIPE_PORT + 10, c.host_rate, &error);
		for (size_t h = 0; h < held.size(); h++)
			across[h].Open(net, node, (uint16_t)(PIPE_PORT + 16 + held[h]), c.host_rate, &error);
	}
	void Connect(const SimNet &net)
	{
		in_rack.Connect(net.host_ip[first[rack] + (me + 1) % g], PIPE_PORT + 10);
		const unsigned nr = (rack + 1) % racks, gn = size[nr];
		for (size_t h = 0; h < held.size(); h++)
			across[h].Connect(net.host_ip[first[nr] + (held[h] % gn + gn - 1) % gn],
					  (uint16_t)(PIPE_PORT + 16 + held[h]));
	}
	void Start(size_t bytes, std::function<void()> cb) override
	{
		done_cb = std::move(cb);
		count = bytes / 4;
		std::vector<uint64_t> parts(g, 0); /* bytes of this rack's parts */
		for (unsigned j = 0; j < kmax; j++)
			parts[j % g] += ShardLen(j) * 4;
		in_rack.Run(ring_steps_of(parts, me, true, false), [this, parts] {
			Across(0, [this, parts] { in_rack.Run(ring_steps_of(parts, me, false, true), done_cb); });
		});
	}

      private:
	size_t ShardLen(unsigned j) const
	{
		size_t off, len;
		hcl_ring_chunk(count, kmax, j, &off, &len);
		return len;
	}
	/* the rings of held shards h, h + 1, ..., one after another */
	void Across(size_t h, std::function<void()> then)
	{
		if (h == held.size()) {
			then();
			return;
		}
		across[h].Run(ring_steps(ShardLen(held[h]), racks, rack),
			      [this, h, then] { Across(h + 1, then); });
	}

	unsigned racks, rack, me, g, kmax = 0;
	size_t count;
	std::vector<unsigned> first, size, held;
	Pipe in_rack;
	std::vector<Pipe> across;
	std::function<void()> done_cb;
};

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
	const unsigned world = c.hosts();
	SimAlgos out;
	for (unsigned i = 0; i < world; i++)
		out.emplace_back(new RingRank(net, net.hosts.Get(i), i, world, c));
	for (unsigned i = 0; i < world; i++)
		static_cast<RingRank *>(out[i].get())->Connect(net.host_ip[(i + 1) % world]);
	return out;
}

SimAlgos sim_hier_create(const SimCfg &c, SimNet &net)
{
	check_size(c);
	SimAlgos out;
	for (unsigned i = 0; i < c.hosts(); i++)
		out.emplace_back(new HierRank(net, net.hosts.Get(i), i, c));
	for (auto &r : out)
		static_cast<HierRank *>(r.get())->Connect(net);
	return out;
}
