/* SPDX-License-Identifier: BSD-3-Clause */
/* nic/'s engine bound to a UDP port of a host (a software aggregator) or
 * of a ToR's INA address (sim_datapath.cc): what agent/softsw and swemu's
 * INA endpoint do with a datagram, minus the frames. */
#include <arpa/inet.h>

#include <cstring>
#include <stdexcept>

#include "sim.h"

using namespace ns3;

SimAgg::SimAgg(SimNet &net, Ptr<Node> node, uint32_t at, uint16_t port, uint32_t nslots, uint16_t elems)
    : eng(ina_engine_create(nslots, elems)), out(new ina_emits), buf(INA_HDR_LEN + INA_MAX_PAYLOAD),
      dp(net.DatapathOf(node)), at(at), port(port), net(&net)
{
	if (!eng)
		throw std::runtime_error("engine: bad size");
	/* a ToR pays nothing per datagram; a software PS's host does */
	auto rx = [this](Ptr<Packet> p, uint32_t ip, uint16_t from_port) {
		sim_host_rx(
			*this->net, dp->GetNode(), [this, p, ip, from_port] { Handle(p, ip, from_port); },
			[this] { SchedulePoll(); });
		SchedulePoll();
	};
	try {
		dp->Bind(at, port, rx);
	} catch (...) {
		ina_engine_destroy(eng);
		delete out;
		throw;
	}
}

SimAgg *SimAgg::Make(SimNet &net, Ptr<Node> node, uint32_t at, uint16_t port, uint32_t nslots, uint16_t elems)
{
	net.aggs.emplace_back(new SimAgg(net, node, at, port, nslots, elems));
	return net.aggs.back().get();
}

SimAgg::~SimAgg()
{
	poll.Cancel();
	ina_engine_destroy(eng);
	delete out;
}

void SimAgg::AddDrops(std::map<std::string, uint64_t> &drops) const
{
	const struct ina_engine_stats *st = ina_engine_stats(eng);
	for (unsigned r = 1; r < INA_R_MAX_; r++)
		if (st->drops[r])
			drops[ina_reason_name((enum ina_reason)r)] += st->drops[r];
}

void SimAgg::Install(const ina_job_cfg &j)
{
	const char *why = nullptr;
	if (ina_job_install(eng, &j, &why) != 0)
		throw std::runtime_error(std::string("job install: ") + (why ? why : "no room"));
}

static Ptr<Packet> frame_of(const ina_emit &e)
{
	uint8_t frame[INA_HDR_LEN + INA_MAX_PAYLOAD];
	ina_hdr_encode(&e.hdr, frame);
	memcpy(frame + INA_HDR_LEN, e.payload, e.payload_len);
	return Create<Packet>(frame, (uint32_t)(INA_HDR_LEN + e.payload_len));
}

void SimAgg::Handle(Ptr<Packet> p, uint32_t from_ip, uint16_t from_port)
{
	ina_engine_set_time(eng, (uint64_t)Simulator::Now().GetNanoSeconds());
	uint32_t len = p->CopyData(buf.data(), (uint32_t)buf.size());
	sim_take_mark(p, buf.data(), len);
	ina_addr src = {};
	src.ip = from_ip;
	src.port = htons(from_port);
	if (ina_engine_rx(eng, buf.data(), len, &src, out) == INA_OK) /* else counted by the engine */
		SendOut();
}

void SimAgg::SendOut()
{
	for (unsigned i = 0; i < out->n; i++) {
		const ina_emit &e = out->e[i];
		dp->SendLater(at, port, e.dst.ip, ntohs(e.dst.port), frame_of(e));
	}
}

/* Idle reports (ina_job_cfg.idle_miss_us) are the engine's to decide;
 * the simulator asks when the engine says one may be due. */
void SimAgg::SchedulePoll()
{
	const long wait = ina_engine_idle_wait(eng);
	if (wait < 0)
		return;
	const int64_t at = Simulator::Now().GetNanoSeconds() + (int64_t)wait * 1000 + 1000;
	if (poll.IsRunning() && poll_at <= at)
		return;
	poll.Cancel();
	poll_at = at;
	poll = Simulator::Schedule(NanoSeconds(at - Simulator::Now().GetNanoSeconds()), &SimAgg::Poll, this);
}

void SimAgg::Poll()
{
	ina_engine_set_time(eng, (uint64_t)Simulator::Now().GetNanoSeconds());
	ina_engine_poll(eng, out);
	SendOut();
	SchedulePoll();
}
