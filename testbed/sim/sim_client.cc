/* SPDX-License-Identifier: BSD-3-Clause */
/* What the simulated INA clients (ps/ps-ina, agent-ring) share: the
 * host's INA port, a call that runs until the algorithm has
 * all its answers, and one timer that re-sends what the windows say is due
 * and sleeps until their next expiry. */
#include <stdexcept>

#include "sim.h"

using namespace ns3;

SimInaClient::SimInaClient(SimNet &net, Ptr<Node> node) : net(&net), dp(net.DatapathOf(node))
{
	dp->Bind(0, INA_HOST_PORT, [this](Ptr<Packet> p, uint32_t, uint16_t) { Recv(p); });
}

void SimInaClient::Begin(std::function<void()> cb)
{
	done_cb = std::move(cb);
	active = true;
	epoch++;
}

struct ResendCtx {
	SimInaClient *c;
	unsigned w;
};

bool SimInaClient::ResendTrampoline(void *ctx, uint32_t slot)
{
	auto *r = static_cast<ResendCtx *>(ctx);
	r->c->ResendSlot(r->w, slot);
	return true;
}

void SimInaClient::ResendWindow(hcl_inaw *win, unsigned w, int64_t now, int64_t floor_ns, int64_t *wake)
{
	ResendCtx ctx = { this, w };
	hcl_inaw_resend(win, now, floor_ns, ResendTrampoline, &ctx, wake, &resent);
}

void SimInaClient::Rearm()
{
	if (!active)
		return;
	int64_t now = sim_now_ns(), wake = now + 1000000000;
	ResendDue(now, &wake);
	if (timer.IsRunning() && timer_at <= wake)
		return;
	timer.Cancel();
	timer_at = wake;
	timer = Simulator::Schedule(NanoSeconds(wake - now), &SimInaClient::Rearm, this);
}

void SimInaClient::Recv(Ptr<Packet> p)
{
	sim_host_rx(*net, dp->GetNode(), [this, p] { Handle(p); }, [this] { AfterRecv(); });
	AfterRecv();
}

void SimInaClient::Handle(Ptr<Packet> p)
{
	uint8_t frame[INA_HDR_LEN + INA_MAX_PAYLOAD + 64];
	uint32_t len = p->CopyData(frame, sizeof(frame));
	sim_take_mark(p, frame, len);
	if (active)
		Take(frame, len);
}

/* After datagrams were taken: the call's end, or the timer again. */
void SimInaClient::AfterRecv()
{
	if (!active)
		return; /* late duplicates of the last call's answers */
	if (Complete()) {
		active = false;
		timer.Cancel();
		Finish();
		done_cb();
		return;
	}
	Rearm();
}
