/* SPDX-License-Identifier: BSD-3-Clause */
/* Another job's traffic on the fabric: from each host to the host of the
 * same index in the next rack (where there is one), UDP datagrams of a
 * jumbo frame's payload at a constant rate, from the start to the end of
 * the run.  It crosses both racks' uplinks (a rack's hosts x the rate
 * each) and the receivers' host links, where the job under test meets it;
 * the receiver's port throws it away.
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
	SimDatapath *tx;
	uint32_t to;
	Time gap;
	void Send()
	{
		tx->Send(0, BG_PORT, to, BG_PORT, Create<Packet>(BG_PAYLOAD));
		Simulator::Schedule(gap, &BgFlow::Send, this);
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
		f->tx = net.DatapathOf(net.hosts.Get(from));
		net.DatapathOf(net.hosts.Get(to))->Bind(0, BG_PORT, [](Ptr<Packet>, uint32_t, uint16_t) {});
		f->to = net.host_ip[to];
		f->gap = NanoSeconds((int64_t)((BG_PAYLOAD + 28) * 8 * 1e9 / (double)c.background_bps));
		Simulator::Schedule(NanoSeconds(997 * h), &BgFlow::Send, f.get()); /* not all in one instant */
		net.flows.push_back(f);
	}
}
