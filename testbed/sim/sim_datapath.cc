/* SPDX-License-Identifier: BSD-3-Clause */
/* A node's datapath without ns-3's IP stack.  A switch picks a frame's
 * port by its IPv4 destination from a table (the fabric is a tree: a ToR
 * knows its hosts and sends the rest up, the spine knows every rack); a
 * host sends everything out of its one link.  A datagram to one of the
 * node's own addresses goes to what is bound to its UDP port, as to a
 * socket.  ns-3's stack (routing lookups over every interface, the
 * headers taken off and put back at each hop, the traffic control layer,
 * the sockets' buffers and demultiplexing) was most of a large run's
 * time, and the answers need none of it: the timing is the links' and
 * the device queues', which stay ns-3's, and every send and delivery
 * happens at the same instant and in the same order as through the stack
 * (the answers match it to the bit). */
#include <arpa/inet.h>

#include <ns3/net-device-queue-interface.h>

#include "sim.h"

using namespace ns3;

static const uint16_t ETH_P_IPV4 = 0x0800;
static const uint8_t IP_UDP = 17;

SimDatapath::SimDatapath(SimNet &net, Ptr<Node> node, bool forwards) : net(&net), node(node), forwards(forwards) {}

unsigned SimDatapath::AddPort(Ptr<NetDevice> dev, uint32_t own_ip)
{
	Ptr<NetDeviceQueueInterface> qi = dev->GetObject<NetDeviceQueueInterface>();
	ports.push_back(Port{ dev, qi ? qi->GetTxQueue(0) : nullptr });
	if (!ip)
		ip = own_ip;
	local.insert(own_ip);
	node->RegisterProtocolHandler(MakeCallback(&SimDatapath::Receive, this), ETH_P_IPV4, dev);
	return (unsigned)ports.size() - 1;
}

void SimDatapath::Bind(uint32_t at, uint16_t port, Rx rx)
{
	if (!at)
		at = ip;
	if (!local.count(at))
		throw std::runtime_error("bind: not an address of the node");
	if (!bound.emplace(Key(at, port), std::move(rx)).second)
		throw std::runtime_error("bind: port " + std::to_string(port) + " in use");
}

void SimDatapath::Receive(Ptr<NetDevice>, Ptr<const Packet> in, uint16_t, const Address &, const Address &,
			  NetDevice::PacketType)
{
	Ptr<Packet> p = in->Copy();
	Ipv4Header h;
	p->PeekHeader(h);
	const uint32_t dst = htonl(h.GetDestination().Get());
	if (local.count(dst))
		Deliver(p);
	else if (forwards)
		Forward(p, dst);
	else
		net->drops.other++; /* a host forwards nothing */
}

/* What a socket bound there would have been given. */
void SimDatapath::Deliver(Ptr<Packet> p)
{
	Ipv4Header h;
	UdpHeader udp;
	p->RemoveHeader(h);
	if (h.GetProtocol() != IP_UDP) {
		net->drops.other++;
		return;
	}
	p->RemoveHeader(udp);
	auto b = bound.find(Key(htonl(h.GetDestination().Get()), udp.GetDestinationPort()));
	if (b == bound.end()) {
		net->drops.other++;
		return;
	}
	b->second(p, htonl(h.GetSource().Get()), udp.GetSourcePort());
}

/* As the traffic control layer without a queue discipline did: a frame
 * that finds its port's queue stopped (no room for one more MTU) is a
 * tail drop; one the queue itself refuses is counted by the queue. */
void SimDatapath::Forward(Ptr<Packet> p, uint32_t dst)
{
	auto r = routes.find(dst);
	const int port = r != routes.end() ? (int)r->second : rest;
	if (port < 0) {
		net->drops.other++;
		return;
	}
	const Port &o = ports[(unsigned)port];
	if (o.txq && o.txq->IsStopped()) {
		net->drops.tail++;
		return;
	}
	o.dev->Send(p, o.dev->GetBroadcast(), ETH_P_IPV4);
}

void SimDatapath::Send(uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port, Ptr<Packet> p)
{
	UdpHeader udp;
	udp.SetSourcePort(src_port);
	udp.SetDestinationPort(dst_port);
	p->AddHeader(udp);
	Ipv4Header h;
	h.SetSource(sim_ipv4(src_ip ? src_ip : ip));
	h.SetDestination(sim_ipv4(dst_ip));
	h.SetProtocol(IP_UDP);
	h.SetPayloadSize(p->GetSize());
	h.SetTtl(64);
	p->AddHeader(h);
	if (local.count(dst_ip)) /* as ns-3's stack: delivered inside the send */
		Deliver(p);
	else
		Forward(p, dst_ip);
}

void SimDatapath::SendLater(uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port, Ptr<Packet> p)
{
	Simulator::ScheduleNow(
		[this, src_ip, src_port, dst_ip, dst_port, p] { Send(src_ip, src_port, dst_ip, dst_port, p); });
}
