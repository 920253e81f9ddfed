/* SPDX-License-Identifier: BSD-3-Clause */
/* Another job's traffic on the fabric: from each host to the host of the
 * same index in the next rack (where there is one), UDP datagrams of a
 * jumbo frame's payload at a constant rate, from the start to the end of
 * the run.  It crosses both racks' uplinks (a rack's hosts x the rate
 * each) and the receivers' host links, where the job under test meets it;
 * the receiver drops it into a socket that reads nothing back.
 * What pacing is said to need (docs/PACING.md): contention that an early
 * rank's traffic adds to. */
#include <stdexcept>

#include "sim.h"

using namespace ns3;

static const uint16_t BG_PORT = 9; /* discard */
static const uint32_t BG_PAYLOAD = 8948;

namespace
{
struct BgFlow {
	Ptr<Socket> tx, rx;
	InetSocketAddress to = InetSocketAddress(Ipv4Address::GetAny(), BG_PORT);
	Time gap;
	void Send()
	{
		tx->SendTo(Create<Packet>(BG_PAYLOAD), 0, to);
		Simulator::Schedule(gap, &BgFlow::Send, this);
	}
	static void Drain(Ptr<Socket> s)
	{
		while (s->Recv())
			;
	}
};
} // namespace

void sim_background(const SimCfg &c, SimNet &net)
{
	if (!c.background_bps || c.racks < 2)
		return;
	for (unsigned h = 0; h < c.hosts(); h++) {
		const unsigned r = c.RackOf(h), i = h - c.RackFirst(r), n = (r + 1) % c.racks;
		if (i >= c.RackSize(n))
			continue;
		auto f = std::make_shared<BgFlow>();
		const unsigned from = h, to = c.RackFirst(n) + i;
		f->tx = Socket::CreateSocket(net.hosts.Get(from), UdpSocketFactory::GetTypeId());
		f->rx = Socket::CreateSocket(net.hosts.Get(to), UdpSocketFactory::GetTypeId());
		if (f->rx->Bind(InetSocketAddress(Ipv4Address::GetAny(), BG_PORT)) != 0)
			throw std::runtime_error("background: port in use");
		f->rx->SetRecvCallback(MakeCallback(&BgFlow::Drain));
		f->to = InetSocketAddress(sim_ipv4(net.host_ip[to]), BG_PORT);
		f->gap = NanoSeconds((int64_t)((BG_PAYLOAD + 28) * 8 * 1e9 / (double)c.background_bps));
		Simulator::Schedule(NanoSeconds(997 * h), &BgFlow::Send, f.get()); /* not all in one instant */
		net.flows.push_back(f);
	}
}
