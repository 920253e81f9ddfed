/* SPDX-License-Identifier: BSD-3-Clause */
/* The trial's fabric as ns-3 nodes: racks of hosts behind a ToR each, the
 * ToRs under one spine (topo.sh's shape), point-to-point links at the
 * trial's rates, tail-drop device queues of the trial's buffers in bytes,
 * no queue discipline in front of them (swemu has none), and random loss
 * on what every switch port sends. */
#include <arpa/inet.h>

#include <cstdlib>
#include <stdexcept>

#include <ns3/point-to-point-module.h>
#include <ns3/traffic-control-module.h>

#include "sim.h"

using namespace ns3;

/* A host's own egress: the kernel's socket and qdisc queues, which the
 * emulated fabric never drops from. */
static const uint64_t HOST_TX_BYTES = 16u << 20;

Ipv4Address sim_ipv4(uint32_t net_order) { return Ipv4Address(ntohl(net_order)); }

static std::string bytes(uint64_t b) { return std::to_string(b) + "B"; }

void sim_count_drop(uint64_t *n, Ptr<const Packet>) { ++*n; }

/* ECN at a switch port: what the queue takes while it holds more than
 * its threshold goes on marked CE (once), if it is ECN-capable */
static void mark(SimMarker *m, Ptr<const Packet> p)
{
	SimCeTag t;
	SimNotEctTag n;
	if (m->q->GetNBytes() > m->threshold && !p->PeekPacketTag(t) && !p->PeekPacketTag(n)) {
		p->AddPacketTag(t);
		++*m->marks;
	}
}

static void count_tx(SimLinkLoad *l, Ptr<const Packet> p) { l->bytes += p->GetSize(); }

/* The two ends' device queues: a's egress, then b's.  Loss is the
 * trial's: on what a switch port sends (swemu's egress emulation), so on
 * a host link only towards the host (a_is_host); so is ECN marking, past
 * ecn x the buffer (0: none). */
static NetDeviceContainer link(Ptr<Node> a, Ptr<Node> b, const std::string (&names)[2], uint64_t rate, double delay_us,
			       uint64_t a_buf, uint64_t b_buf, bool a_is_host, double loss, double ecn,
			       Ptr<UniformRandomVariable> rng, SimNet &n)
{
	SimDrops *drops = &n.drops;
	PointToPointHelper p2p;
	p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate)));
	p2p.SetDeviceAttribute("Mtu", UintegerValue(9000));
	p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds((int64_t)(delay_us * 1000))));
	NetDeviceContainer d = p2p.Install(a, b);
	uint64_t buf[2] = { a_buf, b_buf };
	for (int i = 0; i < 2; i++) {
		Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(d.Get(i));
		dev->GetQueue()->SetAttribute("MaxSize", QueueSizeValue(QueueSize(bytes(buf[i]))));
		dev->GetQueue()->TraceConnectWithoutContext("Drop", MakeBoundCallback(&sim_count_drop, &drops->tail));
		dev->TraceConnectWithoutContext("PhyRxDrop", MakeBoundCallback(&sim_count_drop, &drops->loss));
		n.loads.emplace_back(new SimLinkLoad{ names[i] + "->" + names[!i], rate });
		dev->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&count_tx, n.loads.back().get()));
		if (ecn > 0 && !(a_is_host && i == 0)) {
			const uint32_t threshold = (uint32_t)(ecn * (double)buf[i]);
			n.markers.emplace_back(new SimMarker{ dev->GetQueue(), threshold, &drops->marks });
			dev->GetQueue()->TraceConnectWithoutContext("Enqueue",
								    MakeBoundCallback(&mark, n.markers.back().get()));
		}
		if (loss > 0 && !(a_is_host && i == 1)) {
			Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
			em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
			em->SetAttribute("ErrorRate", DoubleValue(loss));
			em->SetAttribute("RanVar", PointerValue(rng));
			dev->SetAttribute("ReceiveErrorModel", PointerValue(em));
		}
	}
	return d;
}

std::vector<std::string> sim_split_list(const std::string &s)
{
	std::vector<std::string> out;
	for (size_t i = 0; !s.empty() && i <= s.size();) {
		size_t j = s.find(',', i);
		if (j == std::string::npos)
			j = s.size();
		out.push_back(s.substr(i, j - i));
		i = j + 1;
	}
	return out;
}

void sim_ina_racks(SimCfg &c)
{
	c.ina.assign(c.racks, false);
	if (c.ina_rack_list.empty()) {
		if (c.ina_racks > c.racks)
			throw std::runtime_error("inaRacks is more than racks");
		for (unsigned r = 0; r < c.ina_racks; r++)
			c.ina[r] = true;
		return;
	}
	if (c.ina_racks)
		throw std::runtime_error("give inaRacks or inaRackList, not both");
	if (c.ina_rack_list == "none")
		return;
	for (const std::string &w : sim_split_list(c.ina_rack_list)) {
		char *stop = nullptr;
		unsigned long r = strtoul(w.c_str(), &stop, 10);
		if (w.empty() || *stop || r >= c.racks || c.ina[r])
			throw std::runtime_error("inaRackList: '" + w + "' is not a rack (0.." +
						 std::to_string(c.racks - 1) + ", each once)");
		c.ina[r] = true;
	}
}

void sim_build(const SimCfg &c, SimNet &n)
{
	if (c.racks < 1 || (c.rack_sizes.empty() && c.hosts_per_rack < 1) || c.hosts() < 2)
		throw std::runtime_error("need at least two hosts");
	if (!c.rack_sizes.empty() && c.rack_sizes.size() != c.racks)
		throw std::runtime_error("hostsPerRack lists " + std::to_string(c.rack_sizes.size()) +
					 " racks, racks is " + std::to_string(c.racks));
	for (unsigned r = 0; r < c.racks; r++)
		if (c.RackSize(r) < 1)
			throw std::runtime_error("rack " + std::to_string(r) + " has no hosts");
	if (!c.uplink_rates.empty() && c.uplink_rates.size() != c.racks)
		throw std::runtime_error("uplinkRate lists " + std::to_string(c.uplink_rates.size()) +
					 " rates, racks is " + std::to_string(c.racks));
	if (c.loss < 0 || c.loss > 0.5)
		throw std::runtime_error("loss must be in 0..0.5");
	if (c.ecn < 0 || c.ecn > 1)
		throw std::runtime_error("ecn must be in 0..1 (a share of each switch queue; 0: no marks)");
	n.hosts.Create(c.hosts());
	n.tors.Create(c.racks);
	n.spine.Create(1);
	/* every node's datapath (sim_datapath.cc): the ToRs' first, then the
	 * spine's, then the hosts' */
	n.datapath_of.assign(NodeList::GetNNodes(), nullptr);
	for (uint32_t i = 0; i < c.racks + 1 + c.hosts(); i++) {
		Ptr<Node> node = i < c.racks ? n.tors.Get(i) : i == c.racks ? n.spine.Get(0) : n.hosts.Get(i - c.racks - 1);
		n.datapaths.emplace_back(new SimDatapath(n, node, i <= c.racks));
		n.datapath_of[node->GetId()] = n.datapaths.back().get();
	}
	SimDatapath &spine = *n.datapaths[c.racks];

	/* a rack's uplink: the one given, else what its hosts send, divided */
	auto uplink = [&c](unsigned r) {
		return !c.uplink_rates.empty() ? c.uplink_rates[r]
		       : c.uplink_rate	       ? c.uplink_rate
					       : (uint64_t)((double)c.RackSize(r) * (double)c.host_rate /
							    (c.oversubscription > 0 ? c.oversubscription : 1));
	};
	Ptr<UniformRandomVariable> rng = CreateObject<UniformRandomVariable>();
	rng->SetStream((int64_t)c.seed);
	/* a /30 per link: .1 the lower end (host, or ToR on an uplink), .2 the upper */
	Ipv4AddressHelper addr;
	addr.SetBase("10.0.0.0", "255.255.255.252");
	n.host_ip.resize(c.hosts());
	n.tor_ip.resize(c.racks);
	for (unsigned h = 0; h < c.hosts(); h++) {
		unsigned r = c.RackOf(h);
		const std::string names[2] = { "host" + std::to_string(h), "tor" + std::to_string(r) };
		NetDeviceContainer d = link(n.hosts.Get(h), n.tors.Get(r), names, c.host_rate, c.delay_us, HOST_TX_BYTES,
					    c.host_buffer, true, c.loss, c.ecn, rng, n);
		const Ipv4Address host_side = addr.NewAddress(), tor_side = addr.NewAddress();
		addr.NewNetwork();
		n.host_ip[h] = htonl(host_side.Get());
		SimDatapath &host = *n.DatapathOf(n.hosts.Get(h));
		host.RouteRest(host.AddPort(d.Get(0), n.host_ip[h]));
		SimDatapath &tor = *n.datapaths[r];
		tor.Route(n.host_ip[h], tor.AddPort(d.Get(1), htonl(tor_side.Get())));
		if (h == c.RackFirst(r))
			n.tor_ip[r] = htonl(tor_side.Get());
	}
	for (unsigned r = 0; c.racks > 1 && r < c.racks; r++) {
		const std::string names[2] = { "tor" + std::to_string(r), "spine" };
		NetDeviceContainer d = link(n.tors.Get(r), n.spine.Get(0), names, uplink(r), c.delay_us, c.uplink_buffer,
					    c.uplink_buffer, false, c.loss, c.ecn, rng, n);
		const Ipv4Address tor_side = addr.NewAddress(), spine_side = addr.NewAddress();
		addr.NewNetwork();
		/* the address its INA frames to a parent leave from, which the
		 * parent's job names: the ToR's INA address */
		n.tor_ip[r] = htonl(tor_side.Get());
		n.datapaths[r]->RouteRest(n.datapaths[r]->AddPort(d.Get(0), n.tor_ip[r]));
		const unsigned down = spine.AddPort(d.Get(1), htonl(spine_side.Get()));
		spine.Route(n.tor_ip[r], down);
		for (unsigned h = c.RackFirst(r); h < c.RackFirst(r) + c.RackSize(r); h++)
			spine.Route(n.host_ip[h], down);
	}
	if (c.host_packet_ns < 0)
		throw std::runtime_error("hostPacketNs must be 0 or more");
	n.host_packet_ns = c.host_packet_ns;
	if (c.host_packet_ns) { /* hosts only: -1 marks a switch */
		n.rx_free_ns.assign(NodeList::GetNNodes(), -1);
		for (uint32_t h = 0; h < n.hosts.GetN(); h++)
			n.rx_free_ns[n.hosts.Get(h)->GetId()] = 0;
	}
}
