/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-sim: the trial's fabric in ns-3, at sizes one machine cannot
 * emulate (docs/SCALE.md).  Switch nodes run the project's unchanged INA
 * engine (nic/); hosts run the schedules of the host library's
 * algorithms, the INA ones through its own plan (agent/psina_plan) and
 * window (ring/hcl_ina_win), so simulation and emulation share the code
 * that decides who sends what where. */
#ifndef SWEMU_SIM_H
#define SWEMU_SIM_H

#include <arpa/inet.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>

extern "C" {
#include "hcl_env.h" /* HCL_INA_MAX_SHARDS */
#include "hcl_ina_win.h"
#include "hcl_noise.h"
#include "hcl_pace.h"
#include "hcl_workload.h"
#include "ina_engine.h"
#include "ina_proto.h"
#include "psina_plan.h"
}

/* What a run simulates: the trial file's keys of the same names. */
struct SimCfg {
	unsigned racks = 2, hosts_per_rack = 4;
	unsigned ina_racks = 0;		/* the first this many racks have INA ToRs ... */
	std::string ina_rack_list;	/* ... or these ("1,3": a trial file's ina_racks) */
	uint64_t host_rate = 200000000; /* bit/s */
	uint64_t uplink_rate = 0;	/* 0: hosts_per_rack x host_rate / oversubscription */
	double oversubscription = 2.0;
	uint64_t host_buffer = 512 * 1024;   /* bytes, tail drop, towards each host */
	uint64_t uplink_buffer = 512 * 1024; /* bytes, each way of each uplink */
	double loss = 0.0;		     /* random loss on every switch port's egress */
	double delay_us = 1.0;		     /* one way, every link */
	std::string algorithm = "ring";	     /* ring, hier, ps, ps-ina, agent-ring */
	uint64_t size = 1 << 20;	     /* bytes per all-reduce (fp32) */
	unsigned iterations = 5, warmup = 1;
	double compute_ms = 10.0;
	std::string jitter = "normal:2", straggler;
	uint64_t seed = 1;
	unsigned ina_elems = 2048, ina_slots = 8, ps_shards = 0; /* 0: one per host, at most 16 */
	std::string ps_rack_agg = "auto"; /* plain racks' software aggregators: auto, always, never (agent/psina_plan.h) */
	unsigned ring_channels = 2;  /* the trial's: a call of B bytes on min(B / 1 MiB, this) rings */
	bool pace = false;	     /* the pacing layer's rule */
	double limit_s = 600;	     /* simulated seconds before unfinished ranks are an error */
	double rto_ms = 5.0;	     /* INA re-send floor, as the host library's */
	uint64_t background_bps = 0; /* another job: each host to its peer in the next rack, bit/s (sim_background.cc) */
	int64_t host_packet_ns = 0;  /* a host's CPU time per datagram it receives (sim_host_rx_delay); 0: none */
	double ecn = 0.5;	     /* a switch queue marks CE past this share of its buffer (0: never) */
	bool ina_cc = false;	     /* the INA windows follow the marks (ring/hcl_ina_cc.h) */
	/* racks of different sizes (a trial's hosts_per_rack = [3, 2, 3]):
	 * rack r's hosts follow rack r - 1's; empty: hosts_per_rack each */
	std::vector<unsigned> rack_sizes;
	std::vector<uint64_t> uplink_rates; /* per rack (a list); empty: uplink_rate for all */
	unsigned RackSize(unsigned r) const { return rack_sizes.empty() ? hosts_per_rack : rack_sizes[r]; }
	unsigned RackFirst(unsigned r) const
	{
		unsigned f = 0;
		for (unsigned i = 0; i < r; i++)
			f += RackSize(i);
		return f;
	}
	unsigned RackOf(unsigned h) const
	{
		unsigned r = 0;
		for (unsigned f = RackSize(0); h >= f && r + 1 < racks; f += RackSize(++r))
			;
		return r;
	}
	unsigned hosts() const { return RackFirst(racks); }
	std::vector<bool> ina; /* per rack: its ToR aggregates (sim_build fills it in) */
	bool IsIna(unsigned rack) const { return rack < ina.size() && ina[rack]; }
};

/* Every packet the fabric dropped, by why. */
struct SimDrops {
	uint64_t tail = 0;   /* a device queue (the trial's buffer) was full */
	uint64_t loss = 0;   /* the emulated random loss */
	uint64_t other = 0;  /* no route, or no port bound (sim_datapath.cc): never expected */
	uint64_t marks = 0;  /* not a drop: packets a queue marked CE (SimCeTag) */
};
void sim_count_drop(uint64_t *n, ns3::Ptr<const ns3::Packet>);

/* A tag that is there or not (no data): a packet's flag that survives
 * forwarding.  T names itself (kName). */
template <class T> class SimFlagTag : public ns3::Tag
{
      public:
	static ns3::TypeId GetTypeId()
	{
		static ns3::TypeId tid =
			ns3::TypeId(T::kName).SetParent<ns3::Tag>().SetGroupName("swemu").template AddConstructor<T>();
		return tid;
	}
	ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
	uint32_t GetSerializedSize() const override { return 0; }
	void Serialize(ns3::TagBuffer) const override {}
	void Deserialize(ns3::TagBuffer) override {}
	void Print(std::ostream &) const override {}
};
/* ECN's congestion-experienced mark as the simulator carries it: a tag
 * that a switch queue holding more than its threshold puts on what it
 * takes (sim_topo.cc), which survives forwarding; an endpoint that
 * receives it copies it into the INA header's INA_F_CE, as swemu and the
 * hosts copy the IP header's CE (nothing in ns-3's path reads IP's ECN
 * bits here). */
class SimCeTag : public SimFlagTag<SimCeTag>
{
      public:
	static constexpr const char *kName = "SimCeTag";
};
/* A packet that is not ECN-capable, which a queue never marks: the
 * library's transfer (ring, hier) sends without ECT, as only its INA
 * sockets ask for ECN (dgram_udp_opts.ecn), and swemu marks ECT frames
 * only. */
class SimNotEctTag : public SimFlagTag<SimNotEctTag>
{
      public:
	static constexpr const char *kName = "SimNotEctTag";
};
/* An INA datagram's header copied out of p: the queue's mark into its flags. */
inline void sim_take_mark(const ns3::Ptr<ns3::Packet> &p, uint8_t *frame, uint32_t len)
{
	SimCeTag t;
	if (len > 3 && p->PeekPacketTag(t))
		frame[3] |= INA_F_CE;
}

/* A switch port's queue that marks (sim_topo.cc) */
struct SimMarker {
	ns3::Ptr<ns3::Queue<ns3::Packet>> q;
	uint32_t threshold; /* bytes */
	uint64_t *marks;
};

/* One direction of a link and what it sent (sim_topo.cc counts it): the
 * busiest one's transmit time per iteration, beside the algorithm's time,
 * says whether a run is link-bound or waits on something else. */
struct SimLinkLoad {
	std::string name; /* "tor0->host3" */
	uint64_t rate;	  /* bit/s */
	uint64_t bytes = 0;
};

class SimAgg;
class SimDatapath;
/* The built network: hosts 0..N-1 (rack RackOf(i)), a ToR per
 * rack, one spine; every address in network byte order. */
struct SimNet {
	ns3::NodeContainer hosts, tors, spine;
	std::vector<uint32_t> host_ip;		   /* per host */
	SimDrops drops;				   /* traced by address: the network must not move */
	std::vector<std::unique_ptr<SimAgg>> aggs; /* every engine, for its drop counters */
	std::vector<std::shared_ptr<void>> flows;  /* another job's (sim_background.cc) */
	std::vector<uint32_t> tor_ip; /* per rack: its ToR's INA address (its uplink's, else its first host link's) */
	/* the host CPU model (sim_host_rx_delay): per node id, when its
	 * receive path is free again (ns); empty: no cost */
	int64_t host_packet_ns = 0;
	std::vector<int64_t> rx_free_ns;
	std::vector<std::unique_ptr<SimMarker>> markers;
	std::vector<std::unique_ptr<SimLinkLoad>> loads; /* every link direction */
	std::vector<std::unique_ptr<SimDatapath>> datapaths; /* every node's (sim_datapath.cc) */
	SimDatapath *DatapathOf(const ns3::Ptr<ns3::Node> &node) const { return datapath_of.at(node->GetId()); }
	std::vector<SimDatapath *> datapath_of; /* per node id */
};

/* The host CPU model (--hostPacketNs): a host's receive path takes its
 * datagrams one after another, host_packet_ns each (the system call, the
 * copy, the sum on receive), so a datagram reaches the application only
 * when its turn is done.  Switches pay nothing (swemu's cost is apart).
 * Returns how long from now this datagram waits, or -1 when there is no
 * cost and it is handled at once, as without the model. */
inline int64_t sim_host_rx_delay(SimNet &net, const ns3::Ptr<ns3::Node> &node)
{
	const uint32_t id = node->GetId();
	if (!net.host_packet_ns || id >= net.rx_free_ns.size() || net.rx_free_ns[id] < 0)
		return -1;
	const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
	int64_t &free_at = net.rx_free_ns[id];
	free_at = (free_at > now ? free_at : now) + net.host_packet_ns;
	return free_at - now;
}

/* A received datagram's handling (handle) on its host's receive path: at
 * once without the CPU model, else when its turn is done, followed there
 * by `then` (what the caller does after a batch it took at once). */
template <class Handle, class Then>
inline void sim_host_rx(SimNet &net, const ns3::Ptr<ns3::Node> &node, Handle handle, Then then)
{
	const int64_t wait = sim_host_rx_delay(net, node);
	if (wait < 0) {
		handle();
		return;
	}
	ns3::Simulator::Schedule(ns3::NanoSeconds(wait), [handle, then] {
		handle();
		then();
	});
}

/* sim_datapath.cc: a node's datapath in place of ns-3's IP stack (which
 * no node has): a switch's table from IPv4 destination to port, a host's
 * one link, and what is bound to the node's addresses' UDP ports, as
 * sockets would be.  Addresses in network order, UDP ports in host order. */
class SimDatapath
{
      public:
	/* a datagram's payload, and where it came from */
	using Rx = std::function<void(ns3::Ptr<ns3::Packet>, uint32_t src_ip, uint16_t src_port)>;
	SimDatapath(SimNet &net, ns3::Ptr<ns3::Node> node, bool forwards);
	/* dev's frames come here; own_ip is the node's address on it (the
	 * first one given is its address, Ip()) */
	unsigned AddPort(ns3::Ptr<ns3::NetDevice> dev, uint32_t own_ip);
	void Route(uint32_t dst_ip, unsigned port) { routes[dst_ip] = port; }
	void RouteRest(unsigned port) { rest = (int)port; } /* what has no route */
	/* at 0: Ip().  Throws when the address is not the node's or the port is taken. */
	void Bind(uint32_t at, uint16_t port, Rx rx);
	/* A datagram from src_ip (0: Ip()):src_port, at once, as a socket's
	 * send (to the node's own address: delivered inside it); SendLater in
	 * an event of its own, for a sender that must not be re-entered (a
	 * worker and its host's software aggregator, while it walks its window) */
	void Send(uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port, ns3::Ptr<ns3::Packet> payload);
	void SendLater(uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port,
		       ns3::Ptr<ns3::Packet> payload);
	uint32_t Ip() const { return ip; }
	ns3::Ptr<ns3::NetDevice> Nic() const { return ports.empty() ? nullptr : ports[0].dev; } /* a host's link */
	ns3::Ptr<ns3::Node> GetNode() const { return node; }

      private:
	struct Port {
		ns3::Ptr<ns3::NetDevice> dev;
		ns3::Ptr<ns3::NetDeviceQueue> txq;
	};
	static uint64_t Key(uint32_t ip, uint16_t port) { return (uint64_t)ip << 16 | port; }
	void Receive(ns3::Ptr<ns3::NetDevice>, ns3::Ptr<const ns3::Packet>, uint16_t, const ns3::Address &,
		     const ns3::Address &, ns3::NetDevice::PacketType);
	void Deliver(ns3::Ptr<ns3::Packet> p);
	void Forward(ns3::Ptr<ns3::Packet> p, uint32_t dst_ip);
	SimNet *net;
	ns3::Ptr<ns3::Node> node;
	bool forwards;
	uint32_t ip = 0;
	std::vector<Port> ports;
	std::unordered_map<uint32_t, unsigned> routes;
	int rest = -1;
	std::unordered_set<uint32_t> local;
	std::unordered_map<uint64_t, Rx> bound;
};

/* sim_topo.cc: nodes, links (rate, delay, tail-drop buffer in bytes, loss),
 * addresses and routes.  Throws std::runtime_error on a bad setting. */
void sim_build(const SimCfg &c, SimNet &net);
/* c.ina from ina_racks or ina_rack_list; throws on a rack that is not one */
void sim_ina_racks(SimCfg &c);

/* sim_agg.cc: nic/'s engine bound to a UDP port of node, answering from
 * address `at` (network order; a ToR has one per link and a parent's job
 * names one; 0: the node's first).  Lives as long as the simulation;
 * made by Make, which hands it to net.aggs to own. */
class SimAgg
{
      public:
	static SimAgg *Make(SimNet &net, ns3::Ptr<ns3::Node> node, uint32_t at, uint16_t port, uint32_t nslots,
			    uint16_t elems);
	~SimAgg();
	void Install(const ina_job_cfg &j); /* throws with the engine's reason */
	/* What its engine refused, by ina_reason_name, added into drops. */
	void AddDrops(std::map<std::string, uint64_t> &drops) const;

      private:
	SimAgg(SimNet &net, ns3::Ptr<ns3::Node> node, uint32_t at, uint16_t port, uint32_t nslots, uint16_t elems);
	void Handle(ns3::Ptr<ns3::Packet> p, uint32_t from_ip, uint16_t from_port); /* ip network order, port host */
	void SendOut(); /* out's emits */
	void SchedulePoll();
	void Poll();
	ina_engine *eng;
	ina_emits *out;
	ns3::EventId poll; /* the next idle report's check, at poll_at (ns) */
	int64_t poll_at = 0;
	std::vector<uint8_t> buf;
	SimDatapath *dp;
	uint32_t at;
	uint16_t port;
	SimNet *net;
};

/* hcl_inaw reads sent_at 0 as "not sent": simulated time, which starts at
 * 0, shifted by a second. */
inline int64_t sim_now_ns() { return ns3::Simulator::Now().GetNanoSeconds() + 1000000000; }

/* Rank r's input element i: small integers, so fp32 sums are exact; it
 * depends on i only through i % SIM_INPUT_PERIOD. */
#define SIM_INPUT_PERIOD 13u
inline float sim_input(unsigned rank, size_t i) { return (float)((rank * 7 + i) % SIM_INPUT_PERIOD); }
/* A rank's inputs and the sums it must get back, in wire order, made
 * from the period instead of stored: a stored copy of the tensor and of
 * its result per rank was 8 GiB at 256 hosts and 16 MiB, and zeroing it
 * half of a short run's time.  Elements i .. i + n - 1 (n at most
 * INA_MAX_ELEMS) are contiguous here. */
class SimPattern
{
      public:
	SimPattern(unsigned rank, unsigned world);
	const uint8_t *Input(size_t i) const { return in.data() + (i % SIM_INPUT_PERIOD) * 4; }
	/* Whether the n elements at payload are the sum's from element i;
	 * else what differs. */
	std::string Check(size_t i, const uint8_t *payload, size_t n) const;

      private:
	unsigned rank;
	std::vector<uint8_t> in, want;
};

/* One all-reduce call of one rank: Start runs it on `bytes` (fp32, a
 * multiple of 4), calling done when this rank has its result.  An algorithm
 * object lives for the whole run; a workload's calls differ in size. */
class SimAlgo
{
      public:
	virtual ~SimAlgo() = default;
	virtual void Start(size_t bytes, std::function<void()> done) = 0;
	/* What went wrong (a wrong sum, a timeout), empty when nothing. */
	std::string error;
};

/* Every rank's algorithm object, owned: freed after the simulation (whose
 * events point at them), or as the stack unwinds from a set-up error. */
using SimAlgos = std::vector<std::unique_ptr<SimAlgo>>;

/* sim_client.cc: what the INA clients share.  A subclass starts a call
 * with Begin and its first sends, then Rearm; it takes each datagram in
 * Take, says in Complete when the call has everything, checks it in
 * Finish (setting error), and re-sends slot `slot` of window w in
 * ResendSlot, which ResendWindow (hcl_inaw_resend) calls. */
class SimInaClient : public SimAlgo
{
      public:
	SimInaClient(SimNet &net, ns3::Ptr<ns3::Node> node);
	uint64_t resent = 0;

      protected:
	void Begin(std::function<void()> cb);
	void Rearm();
	void ResendWindow(hcl_inaw *win, unsigned w, int64_t now, int64_t floor_ns, int64_t *wake);
	void Send(ns3::Ptr<ns3::Packet> p, const ina_addr &to) /* to: network order */
	{
		dp->SendLater(0, INA_HOST_PORT, to.ip, ntohs(to.port), p);
	}
	virtual void ResendDue(int64_t now, int64_t *wake) = 0;
	virtual void ResendSlot(unsigned w, uint32_t slot) = 0;
	virtual void Take(const uint8_t *buf, uint32_t len) = 0;
	virtual bool Complete() const = 0;
	virtual void Finish() = 0;
	uint32_t epoch = 0;
	bool active = false; /* a call is running */

      private:
	static bool ResendTrampoline(void *ctx, uint32_t slot);
	void Recv(ns3::Ptr<ns3::Packet> p);
	void Handle(ns3::Ptr<ns3::Packet> p);
	void AfterRecv();
	SimNet *net;
	SimDatapath *dp;
	std::function<void()> done_cb;
	ns3::EventId timer;
	int64_t timer_at = 0;
};

/* "a,b,c" -> its items ("" -> none; "a," -> "a" and ""). */
std::vector<std::string> sim_split_list(const std::string &s);
/* sim_background.cc: another job's flows across the racks (c.background_bps). */
void sim_background(const SimCfg &c, SimNet &net);
/* sim_ring.cc: the library's ring (hcl_ring.c on hcl_chan.c's channels)
 * and hier (hcl_hier.c's three phases), over a model of the library's own
 * transfer (hcl_xfer: windowed jumbo datagrams). */
SimAlgos sim_ring_create(const SimCfg &c, SimNet &net);
SimAlgos sim_hier_create(const SimCfg &c, SimNet &net);
/* sim_ina.cc: ps and ps-ina (ring/hcl_algo_ps.c's plan, shards and
 * window), the software PS and the ToRs running nic/'s engine. */
SimAlgos sim_ps_create(const SimCfg &c, SimNet &net, bool with_tors);
/* sim_aring.cc: agent-ring (agent/aring_plan, ring/hcl_aring.c's worker). */
SimAlgos sim_aring_create(const SimCfg &c, SimNet &net);

/* Bytes of an IPv4 address in network order as ns-3's address. */
ns3::Ipv4Address sim_ipv4(uint32_t net_order);

#endif
