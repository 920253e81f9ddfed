/* SPDX-License-Identifier: BSD-3-Clause */
/* agent-ring in the simulator: the plan is the host library's
 * (agent/aring_plan: an INA rack is one ring member whose ToR runs every
 * step job, a rank of a rack without INA a member of its own with a
 * software aggregator), every aggregator is nic/'s engine, and every rank
 * runs ring/hcl_aring.c's worker as events: a window of slots per step
 * job, all steps at once, slice k of a step in slot k % slots, DATA (or a
 * join) re-sent by hcl_ina_win's timer, with the chain-wait floor until
 * the chain has reached the step; a slice done when the ACK and/or result
 * its step promises has come.  Real fp32 data, every result checked. */
#include <arpa/inet.h>

#include <memory>
#include <stdexcept>

#include "sim.h"

extern "C" {
#include "aring_plan.h"
#include "hcl_aring.h" /* its timer constants */
}

using namespace ns3;

static const uint8_t GOT_ACK = 1, GOT_RESULT = 2;

class ArRank : public SimInaClient
{
      public:
	ArRank(SimNet &net, Ptr<Node> node, unsigned rank, std::shared_ptr<const aring_plan> plan, const SimCfg &c)
	    : SimInaClient(net, node), plan(plan), p(plan.get()), rank(rank), member(p->member_of[rank]),
	      index((uint16_t)p->index_of[rank]), steps(aring_steps(p)), in(c.size / 4), data(c.size / 4)
	{
		const ina_addr &g = p->mem[member].agg;
		agg = InetSocketAddress(sim_ipv4(g.ip), ntohs(g.port));
		s.resize(steps);
		for (auto &st : s)
			if (hcl_inaw_init(&st.win, p->slots, HCL_ARING_RTO_FLOOR_NS, 500000000))
				throw std::runtime_error("out of memory");
		for (size_t i = 0; i < in.size(); i++)
			in[i] = sim_input(rank, i);
	}
	~ArRank() override
	{
		for (auto &st : s)
			hcl_inaw_free(&st.win);
	}

	void Start(size_t bytes, std::function<void()> cb) override
	{
		Begin(std::move(cb));
		if (in.size() != bytes / 4) { /* this call's size (a workload's buckets differ) */
			in.resize(bytes / 4);
			data.resize(bytes / 4);
			for (size_t i = 0; i < in.size(); i++)
				in[i] = sim_input(rank, i);
		}
		left = 0;
		for (unsigned k = 0; k < steps; k++) {
			Step &ss = s[k];
			aring_step_of(p, member, k, in.size(), &ss.st);
			ss.nslices = (ss.st.hi - ss.st.lo + p->elems - 1) / p->elems;
			ss.done = 0;
			hcl_inaw_reset(&ss.win);
			ss.win.end = ss.nslices; /* as hcl_aring.c */
			left += ss.nslices;
		}
		for (unsigned k = 0; k < steps; k++)
			for (size_t j = 0; j < s[k].nslices && j < p->slots; j++)
				StartSlice(k, j);
		Rearm();
	}

      private:
	struct Step {
		aring_step st;
		size_t nslices = 0, done = 0;
		hcl_inaw win;
	};

	size_t Lo(const Step &ss, size_t k) const { return ss.st.lo + k * p->elems; }
	size_t N(const Step &ss, size_t k) const { return std::min((size_t)p->elems, ss.st.hi - Lo(ss, k)); }
	/* the step before it (or it) has finished a slice here */
	bool ChainReached(unsigned k) const { return k == 0 || s[k].done > 0 || s[k - 1].done > 0; }

	void StartSlice(unsigned k, size_t j)
	{
		uint32_t slot = (uint32_t)(j % p->slots);
		hcl_inaw_start(&s[k].win, slot, j, sim_now_ns(), !ChainReached(k));
		SendSlice(k, slot, j, false);
	}

	void SendSlice(unsigned k, uint32_t slot, size_t j, bool retx)
	{
		const Step &ss = s[k];
		const size_t n = N(ss, j);
		ina_hdr h = {};
		h.version = INA_VERSION;
		h.type = INA_T_DATA;
		h.dtype = p->dtype;
		h.flags = (uint8_t)((retx ? INA_F_RETX : 0) | (ss.st.join ? INA_F_JOIN : 0));
		h.job = (uint16_t)(p->job0 + k);
		h.contributor = index;
		h.slot = slot | (ss.win.s[slot].set ? INA_SLOT_SET_BIT : 0);
		h.epoch = epoch;
		h.seq = (uint32_t)j;
		h.count = (uint16_t)n;
		uint8_t frame[INA_HDR_LEN + INA_MAX_PAYLOAD];
		ina_hdr_encode(&h, frame);
		size_t len = INA_HDR_LEN;
		if (!ss.st.join) {
			hcl_ina_swap_elems(frame + INA_HDR_LEN, &in[Lo(ss, j)], n, 4);
			len += 4 * n;
		}
		Send(Create<Packet>(frame, (uint32_t)len), agg);
	}

	void ResendSlot(unsigned k, uint32_t slot) override { SendSlice(k, slot, s[k].win.s[slot].slice, true); }

	void ResendDue(int64_t now, int64_t *wake) override
	{
		for (unsigned k = 0; k < steps; k++)
			ResendWindow(&s[k].win, k, now, ChainReached(k) ? 0 : HCL_ARING_CHAIN_WAIT_NS, wake);
	}

	/* A RESULT or ACK: a slice is done when what its step promises came. */
	void Take(const uint8_t *buf, uint32_t len) override
	{
		ina_pkt pk;
		if (ina_parse(buf, len, &pk) != INA_OK || pk.hdr.job < p->job0 || pk.hdr.job >= p->job0 + steps ||
		    (pk.hdr.type != INA_T_RESULT && pk.hdr.type != INA_T_ACK))
			return;
		Step &ss = s[pk.hdr.job - p->job0];
		hcl_inaw_slot *o = hcl_inaw_match(&ss.win, &pk.hdr, epoch);
		const uint8_t what = pk.hdr.type == INA_T_ACK ? GOT_ACK : GOT_RESULT;
		const bool wanted = what == GOT_ACK ? ss.st.need_ack : ss.st.need_result;
		if (!o || pk.hdr.count != N(ss, o->slice) || !wanted || (o->got & what))
			return; /* a duplicate, or for a slice already done */
		o->got |= what;
		if (what == GOT_RESULT)
			hcl_ina_swap_elems(&data[Lo(ss, o->slice)], pk.payload, pk.hdr.count, 4);
		if ((ss.st.need_ack && !(o->got & GOT_ACK)) || (ss.st.need_result && !(o->got & GOT_RESULT)))
			return;
		hcl_inaw_done(&ss.win, o, sim_now_ns());
		ss.done++;
		left--;
		if (o->slice + p->slots < ss.nslices)
			StartSlice(pk.hdr.job - p->job0, o->slice + p->slots);
	}

	bool Complete() const override { return left == 0; }
	void Finish() override { error = sim_check_sum(data, p->world, rank); }

	std::shared_ptr<const aring_plan> plan; /* shared by every rank: the last one frees it */
	const aring_plan *p;
	unsigned rank, member;
	uint16_t index;
	unsigned steps;
	std::vector<float> in, data;
	std::vector<Step> s;
	InetSocketAddress agg = InetSocketAddress(Ipv4Address::GetAny(), 0);
	size_t left = 0;
};

SimAlgos sim_aring_create(const SimCfg &c, SimNet &net)
{
	const unsigned world = c.hosts();
	if (c.ina_elems < 1 || c.ina_elems > INA_MAX_ELEMS || c.size % 4 || c.size == 0)
		throw std::runtime_error("ina_elems must be 1.." + std::to_string(INA_MAX_ELEMS) +
					 " and size a positive multiple of 4");
	std::vector<plan_rank> ranks(world);
	std::vector<ina_addr> soft(world);
	for (unsigned i = 0; i < world; i++) {
		unsigned r = c.RackOf(i);
		ranks[i] = plan_rank{};
		ranks[i].ina.ip = net.host_ip[i];
		ranks[i].ina.port = htons(INA_HOST_PORT);
		ranks[i].rack = (int)r;
		if (c.IsIna(r)) {
			ranks[i].tor.ip = net.tor_ip[r];
			ranks[i].tor.port = htons(INA_UDP_PORT_MIN);
		}
		soft[i] = ranks[i].ina;
		soft[i].port = htons(INA_PS_PORT);
	}
	char err[256];
	aring_plan *built = new aring_plan;
	if (aring_plan_build(ranks.data(), soft.data(), world, 100, INA_D_FP32, c.ina_slots, (uint16_t)c.ina_elems,
			     built, err, sizeof(err)) < 0) {
		delete built;
		throw std::runtime_error(err);
	}
	std::shared_ptr<const aring_plan> p(built, [](const aring_plan *q) {
		aring_plan_free(const_cast<aring_plan *>(q));
		delete q;
	});
	const unsigned steps = aring_steps(p.get());
	for (unsigned k = 0; k < p->m; k++) {
		const aring_member &m = p->mem[k];
		SimAgg *a = m.ina ? SimAgg::Make(net, net.tors.Get((uint32_t)m.rack), net.tor_ip[(unsigned)m.rack],
						 INA_UDP_PORT_MIN, steps * c.ina_slots, (uint16_t)c.ina_elems)
				  : SimAgg::Make(net, net.hosts.Get(p->worker_rank[m.first]), 0, INA_PS_PORT,
						 steps * c.ina_slots, (uint16_t)c.ina_elems);
		for (unsigned st = 0; st < steps; st++) {
			ina_job_cfg j;
			aring_job(p.get(), k, st, &j);
			a->Install(j);
		}
	}
	SimAlgos out;
	for (unsigned i = 0; i < world; i++)
		out.emplace_back(new ArRank(net, net.hosts.Get(i), i, p, c));
	return out;
}
