/* SPDX-License-Identifier: BSD-3-Clause */
/* ps and ps-ina in the simulator.  The plan is the host library's
 * (agent/psina_plan: which ToRs aggregate, the software PS cut in shards
 * over the hosts), every aggregator is nic/'s engine on a UDP port
 * (a ToR's, or a host's PS shard as agent/softsw runs it), and every
 * rank's client keeps ring/hcl_ina_win's window per shard: shard h's
 * slices go out in order, slice k into slot (k - first) % slots, as many
 * at a time as the window and its stalled slices allow, re-sent by the
 * same round-trip timer, RACK and MISS rules as on real hosts.  Payloads are
 * real fp32 values, so every result is checked. */
#include <arpa/inet.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "sim.h"

using namespace ns3;

/* One rank's INA client over every shard. */
class PsRank : public SimInaClient
{
      public:
	struct Shard {
		uint16_t job;
		ina_addr server = {};
		size_t first, end, next; /* its slices; the next to start */
		hcl_inaw win;
	};

	PsRank(SimNet &net, Ptr<Node> node, unsigned rank, unsigned world, uint16_t index, std::vector<Shard> sh,
	       uint32_t shard_slots, uint32_t spares, uint16_t slice_elems, const SimCfg &c)
	    : SimInaClient(net, node), index(index), shards(std::move(sh)), elems(slice_elems), pat(rank, world)
	{
		Cut(c.size / 4);
		const unsigned n = (unsigned)shards.size();
		slots = shard_slots + spares; /* the plan's window (psina_shard_slots) and spares */
		const int64_t floor_ns = (int64_t)(c.rto_ms * 1e6);
		for (unsigned h = 0; h < n; h++) {
			if (hcl_inaw_init(&shards[h].win, slots, floor_ns, floor_ns > 500000000 ? floor_ns : 500000000))
				throw std::runtime_error("out of memory");
			shards[h].win.window = shard_slots;
			shards[h].win.rack = true;
			shards[h].win.answers = true;
			shards[h].win.cc.on = c.ina_cc;
		}
	}
	~PsRank() override
	{
		for (auto &s : shards)
			hcl_inaw_free(&s.win);
	}

	void Start(size_t bytes, std::function<void()> cb) override
	{
		Begin(std::move(cb));
		done = 0;
		if (count != bytes / 4) /* this call's size (a workload's buckets differ) */
			Cut(bytes / 4);
		for (auto &s : shards) {
			hcl_inaw_reset(&s.win);
			s.win.end = s.end;
		}
		for (auto &s : shards)
			s.next = s.first;
		/* the shards' in turn, as ring/hcl_ina.c */
		for (bool more = true; more;) {
			more = false;
			for (unsigned h = 0; h < shards.size(); h++)
				more |= StartNext(h);
		}
		Rearm();
	}

      private:
	size_t SliceLen(size_t k) const { return std::min((size_t)elems, count - k * elems); }

	/* elems elements in slices, dealt over the shards as ring/hcl_ina.c does */
	void Cut(size_t elements)
	{
		count = elements;
		nslices = (count + elems - 1) / elems;
		const size_t n = shards.size();
		for (size_t h = 0; h < n; h++) {
			shards[h].first = nslices * h / n;
			shards[h].end = nslices * (h + 1) / n;
		}
	}

	bool StartNext(unsigned h)
	{
		Shard &s = shards[h];
		const int j = hcl_inaw_next_slot(&s.win, s.next, s.first);
		if (j < 0)
			return false;
		hcl_inaw_start(&s.win, (uint32_t)j, s.next, sim_now_ns(), false);
		SendSlice(h, (uint32_t)j, s.next++, false);
		return true;
	}

	void Fill(unsigned h)
	{
		while (StartNext(h))
			;
	}

	void SendSlice(unsigned h, uint32_t j, size_t k, bool retx)
	{
		const size_t n = SliceLen(k);
		ina_hdr hd = {};
		hd.version = INA_VERSION;
		hd.type = INA_T_DATA;
		hd.dtype = INA_D_FP32;
		hd.flags = retx ? INA_F_RETX : 0;
		hd.job = shards[h].job;
		hd.contributor = index;
		hd.slot = j | (shards[h].win.s[j].set ? INA_SLOT_SET_BIT : 0);
		hd.epoch = epoch;
		hd.seq = (uint32_t)k;
		hd.count = (uint16_t)n;
		uint8_t frame[INA_HDR_LEN + INA_MAX_PAYLOAD];
		ina_hdr_encode(&hd, frame);
		memcpy(frame + INA_HDR_LEN, pat.Input(k * elems), n * 4);
		Send(Create<Packet>(frame, (uint32_t)(INA_HDR_LEN + n * 4)), shards[h].server);
	}

	void ResendSlot(unsigned h, uint32_t slot) override { SendSlice(h, slot, shards[h].win.s[slot].slice, true); }

	void ResendDue(int64_t now, int64_t *wake) override
	{
		for (unsigned h = 0; h < shards.size(); h++) {
			ResendWindow(&shards[h].win, h, now, 0, wake);
			Fill(h);
		}
	}

	/* A result: its slice's elements into place, the slot's next slice out. */
	void Take(const uint8_t *frame, uint32_t len) override
	{
		ina_pkt pk;
		if (ina_parse(frame, len, &pk) != INA_OK ||
		    (pk.hdr.type != INA_T_RESULT && pk.hdr.type != INA_T_HAVE && pk.hdr.type != INA_T_MISS))
			return;
		/* shard h's job is the first's + 2h (sim_ps_create) */
		const unsigned h = (unsigned)(pk.hdr.job - shards[0].job) / 2;
		if (pk.hdr.job < shards[0].job || h >= shards.size() || shards[h].job != pk.hdr.job)
			return;
		if (pk.hdr.type == INA_T_MISS) { /* as ring/hcl_ina.c takes it */
			int slot = hcl_inaw_missed(&shards[h].win, &pk.hdr, epoch);
			if (slot >= 0) {
				ResendSlot(h, (uint32_t)slot);
				hcl_inaw_resent(&shards[h].win, (uint32_t)slot, sim_now_ns());
				resent++;
				Fill(h);
			}
			return;
		}
		hcl_inaw_slot *o = hcl_inaw_match(&shards[h].win, &pk.hdr, epoch);
		if (!o)
			return; /* a duplicate */
		if (pk.hdr.type == INA_T_HAVE) {
			hcl_inaw_held(o, sim_now_ns()); /* as ring/hcl_ina.c takes it */
			return;
		}
		const size_t k = o->slice, n = SliceLen(k);
		if (pk.hdr.count != n || pk.payload_len != n * 4) {
			error = "a result of the wrong length";
			return;
		}
		if (error.empty())
			error = pat.Check(k * elems, pk.payload, n);
		hcl_inaw_answer(&shards[h].win, pk.hdr.flags & INA_F_CE, sim_now_ns());
		hcl_inaw_done(&shards[h].win, o, sim_now_ns());
		done++;
		Fill(h);
	}

	bool Complete() const override { return done == nslices; }
	void Finish() override {} /* each result was checked as it came (Take) */

	uint16_t index;
	std::vector<Shard> shards;
	unsigned elems;
	uint32_t slots = 0;
	SimPattern pat;
	size_t count = 0, nslices = 0, done = 0;
};

SimAlgos sim_ps_create(const SimCfg &c, SimNet &net, bool with_tors)
{
	/* 0: as a trial's ps_shards = 0 */
	const unsigned world = c.hosts(),
		       shards = c.ps_shards ? c.ps_shards : psina_auto_shards(world, c.racks, with_tors);
	const uint16_t job0 = 100;
	if (shards > world || shards > HCL_INA_MAX_SHARDS)
		throw std::runtime_error("ps_shards must be at most the hosts (and " +
					 std::to_string(HCL_INA_MAX_SHARDS) + ")");
	if (c.ina_elems < 1 || c.ina_elems > INA_MAX_ELEMS || c.size % 4 || c.size == 0)
		throw std::runtime_error("ina_elems must be 1.." + std::to_string(INA_MAX_ELEMS) +
					 " and size a positive multiple of 4");
	std::vector<plan_rank> ranks(world);
	for (unsigned i = 0; i < world; i++) {
		unsigned r = c.RackOf(i);
		ranks[i] = plan_rank{};
		ranks[i].ina.ip = net.host_ip[i];
		ranks[i].ina.port = htons(INA_HOST_PORT);
		ranks[i].rack = (int)r;
		if (with_tors && c.IsIna(r)) {
			ranks[i].tor.ip = net.tor_ip[r];
			ranks[i].tor.port = htons(INA_UDP_PORT_MIN);
		}
	}
	std::vector<ina_addr> ps_addr(shards);
	for (unsigned h = 0; h < shards; h++) {
		ps_addr[h] = ina_addr{};
		ps_addr[h].ip = net.host_ip[psina_shard_host(h, shards, world)];
		ps_addr[h].port = htons((uint16_t)(INA_PS_PORT + h));
	}
	/* as ring/hcl_algo_ps.c: by default ps-ina's with three racks or more, ps's past the limit */
	enum psina_rackagg_mode mode = c.ps_rack_agg == "always"  ? PSINA_RACKAGG_ALWAYS
				       : c.ps_rack_agg == "never" ? PSINA_RACKAGG_NEVER
				       : with_tors		  ? PSINA_RACKAGG_MANY_RACKS
								  : PSINA_RACKAGG_PAST_LIMIT;
	if (c.ps_rack_agg != "auto" && c.ps_rack_agg != "always" && c.ps_rack_agg != "never")
		throw std::runtime_error("psRackAgg: auto, always or never, not " + c.ps_rack_agg);
	const uint16_t rack_port = (uint16_t)(INA_PS_PORT + shards); /* + the host, as ring/hcl_algo_ps.c */
	struct psina_plan plan;
	char err[256];
	if (psina_plan_racks(ranks.data(), world, &ps_addr[0], job0, INA_D_FP32, c.ina_slots, (uint16_t)c.ina_elems,
			     mode, &plan, err, sizeof(err)) < 0)
		throw std::runtime_error(err);
	const unsigned n = plan.use_ps ? shards : 1;
	const uint16_t elems = psina_shard_elems(&plan, c.ina_slots, n, (uint16_t)c.ina_elems);
	const uint32_t shard_slots = psina_shard_slots(&plan, c.ina_slots, n, elems);
	const uint32_t spares = psina_shard_spares(&plan), job_slots = shard_slots + spares; /* as ring/hcl_algo_ps.c */
	/* the aggregators: owned by net (freed after the simulation) */
	std::vector<SimAgg *> tor_agg(c.racks, nullptr);
	for (unsigned t = 0; t < plan.ntor; t++) {
		unsigned r = (unsigned)plan.tor[t].rack;
		tor_agg[r] = SimAgg::Make(net, net.tors.Get(r), net.tor_ip[r], INA_UDP_PORT_MIN, job_slots * n,
					  (uint16_t)c.ina_elems);
		for (unsigned h = 0; h < n; h++) {
			ina_job_cfg j;
			psina_shard_job(&plan.tor[t].job, (uint16_t)(job0 + 2 * h), &ps_addr[h], &j);
			j.nslots = job_slots;
			tor_agg[r]->Install(j);
		}
	}
	for (unsigned h = 0; plan.use_ps && h < n; h++) {
		unsigned host = (unsigned)psina_shard_host(h, n, world);
		auto *a = SimAgg::Make(net, net.hosts.Get(host), 0, ntohs(ps_addr[h].port), job_slots,
				       (uint16_t)c.ina_elems);
		ina_job_cfg j;
		psina_shard_ps_job(&plan, h, n, (uint16_t)(job0 + 2 * h), &ps_addr[h], rack_port, &j);
		j.nslots = job_slots;
		a->Install(j);
	}
	/* the rack aggregators: one per host that runs any, with its shards' jobs */
	std::vector<std::vector<ina_job_cfg>> rack_jobs(world);
	for (unsigned a = 0; a < plan.nrackagg; a++)
		for (unsigned h = 0; h < n; h++) {
			ina_job_cfg j;
			psina_shard_job(&plan.rackagg[a].job, (uint16_t)(job0 + 2 * h), &ps_addr[h], &j);
			j.nslots = job_slots;
			rack_jobs[(unsigned)psina_rackagg_host(&plan, a, h, n)].push_back(j);
		}
	for (unsigned host = 0; host < world; host++) {
		if (rack_jobs[host].empty())
			continue;
		auto *a = SimAgg::Make(net, net.hosts.Get(host), 0, (uint16_t)(rack_port + host),
				       job_slots * (uint32_t)rack_jobs[host].size(), (uint16_t)c.ina_elems);
		for (auto &j : rack_jobs[host])
			a->Install(j);
	}
	SimAlgos out;
	for (unsigned i = 0; i < world; i++) {
		std::vector<PsRank::Shard> sh(n);
		for (unsigned h = 0; h < n; h++) {
			sh[h].job = (uint16_t)(job0 + 2 * h);
			sh[h].server = psina_client_server(&plan, i, h, n, ps_addr.data(), rack_port);
		}
		out.emplace_back(new PsRank(net, net.hosts.Get(i), i, world, plan.client[i].index, std::move(sh),
					    shard_slots, spares, elems, c));
	}
	psina_plan_free(&plan);
	return out;
}
