/* SPDX-License-Identifier: BSD-3-Clause */
/* agent-ring in the simulator: the plan is the host library's
 * (agent/aring_plan: an INA rack is one ring member whose ToR runs the
 * member's one job for every step, a rank of a rack without INA a member
 * of its own with a software aggregator), every aggregator is nic/'s
 * engine, and every rank runs ring/hcl_aring.c's worker as events: one
 * window of slots over all the call's slices in seq order, slice q in slot
 * q % slots, DATA (or a join) re-sent by hcl_ina_win's timer, with the
 * chain-wait floor until a slice has finished, the window following the
 * marks with --inaCc (hcl_aring_fill); a slice done when the ACK and/or
 * result its step promises has come.  Real fp32 data, every result
 * checked. */
#include <arpa/inet.h>

#include <cstring>
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
	ArRank(SimNet &net, Ptr<Node> node, unsigned rank, std::shared_ptr<const aring_plan> plan, bool cc)
	    : SimInaClient(net, node), plan(plan), p(plan.get()), member(p->member_of[rank]),
	      index((uint16_t)p->index_of[rank]), pat(rank, p->world)
	{
		agg = p->mem[member].agg;
		if (hcl_inaw_init(&win, p->slots, HCL_ARING_RTO_FLOOR_NS, 500000000))
			throw std::runtime_error("out of memory");
		win.chain = true; /* as hcl_aring.c */
		win.cc.on = cc;
	}
	~ArRank() override { hcl_inaw_free(&win); }

	void Start(size_t bytes, std::function<void()> cb) override
	{
		Begin(std::move(cb));
		aring_call_of(p, bytes / 4, &call); /* this call's size (a workload's buckets differ) */
		done = 0;
		hcl_inaw_reset(&win);
		win.end = call.slices; /* as hcl_aring.c */
		win.window = aring_call_window(p, &call);
		next = 0;
		Fill(SIZE_MAX);
		Rearm();
	}

      private:
	aring_step SliceOf(size_t q) const
	{
		aring_step st;
		aring_slice_of(p, &call, member, q, &st);
		return st;
	}
	/* ring/hcl_aring.c's rule: after slice q (SIZE_MAX: the call's start) */
	void Fill(size_t q)
	{
		hcl_aring_fill(
			p, &call, &win, done, &next, q, [](void *me, size_t s) { static_cast<ArRank *>(me)->StartSlice(s); },
			this);
	}
	void StartSlice(size_t q)
	{
		uint32_t slot = (uint32_t)(q % p->slots);
		hcl_inaw_start(&win, slot, q, sim_now_ns(), done == 0);
		SendSlice(slot, q, false);
	}

	void SendSlice(uint32_t slot, size_t q, bool retx)
	{
		const aring_step st = SliceOf(q);
		const size_t n = st.hi - st.lo;
		ina_hdr h = {};
		h.version = INA_VERSION;
		h.type = INA_T_DATA;
		h.dtype = p->dtype;
		h.flags = (uint8_t)((retx ? INA_F_RETX : 0) | (st.join ? INA_F_JOIN : 0));
		h.job = p->job;
		h.contributor = index;
		h.slot = slot | (win.s[slot].set ? INA_SLOT_SET_BIT : 0);
		h.epoch = epoch;
		h.seq = (uint32_t)q;
		h.count = (uint16_t)n;
		uint8_t frame[INA_HDR_LEN + INA_MAX_PAYLOAD];
		ina_hdr_encode(&h, frame);
		size_t len = INA_HDR_LEN;
		if (!st.join) {
			const size_t real = aring_real(&call, &st);
			memcpy(frame + INA_HDR_LEN, pat.Input(st.lo), 4 * real);
			memset(frame + INA_HDR_LEN + 4 * real, 0, 4 * (n - real));
			len += 4 * n;
		}
		Send(Create<Packet>(frame, (uint32_t)len), agg);
	}

	void ResendSlot(unsigned, uint32_t slot) override { SendSlice(slot, win.s[slot].slice, true); }

	void ResendDue(int64_t now, int64_t *wake) override
	{
		ResendWindow(&win, 0, now, done ? 0 : HCL_ARING_CHAIN_WAIT_NS, wake);
	}

	/* A RESULT or ACK: a slice is done when what its step promises came. */
	void Take(const uint8_t *buf, uint32_t len) override
	{
		ina_pkt pk;
		if (ina_parse(buf, len, &pk) != INA_OK || pk.hdr.job != p->job ||
		    (pk.hdr.type != INA_T_RESULT && pk.hdr.type != INA_T_ACK))
			return;
		hcl_inaw_slot *o = hcl_inaw_match(&win, &pk.hdr, epoch);
		if (!o)
			return; /* a duplicate, or for a slice already done */
		const aring_step st = SliceOf(o->slice);
		const uint8_t what = pk.hdr.type == INA_T_ACK ? GOT_ACK : GOT_RESULT;
		const bool wanted = what == GOT_ACK ? st.need_ack : st.need_result;
		if (pk.hdr.count != st.hi - st.lo || !wanted || (o->got & what))
			return;
		o->got |= what;
		hcl_inaw_answer(&win, pk.hdr.flags & INA_F_CE, sim_now_ns());
		if (what == GOT_RESULT && error.empty())
			error = pat.Check(st.lo, pk.payload, aring_real(&call, &st));
		if ((st.need_ack && !(o->got & GOT_ACK)) || (st.need_result && !(o->got & GOT_RESULT)))
			return;
		hcl_inaw_done(&win, o, sim_now_ns());
		done++;
		Fill(o->slice);
	}

	bool Complete() const override { return done == call.slices; }
	void Finish() override {} /* each result was checked as it came (Take) */

	std::shared_ptr<const aring_plan> plan; /* shared by every rank: the last one frees it */
	const aring_plan *p;
	unsigned member;
	uint16_t index;
	SimPattern pat; /* the inputs sent and the sums checked */
	hcl_inaw win;
	aring_call call = {};
	size_t done = 0, next = 0; /* slices finished here; the next to start */
	ina_addr agg = {};
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
	for (unsigned k = 0; k < p->m; k++) {
		const aring_member &m = p->mem[k];
		SimAgg *a = m.ina ? SimAgg::Make(net, net.tors.Get((uint32_t)m.rack), net.tor_ip[(unsigned)m.rack],
						 INA_UDP_PORT_MIN, p->slots, (uint16_t)c.ina_elems)
				  : SimAgg::Make(net, net.hosts.Get(p->worker_rank[m.first]), 0, INA_PS_PORT,
						 p->slots, (uint16_t)c.ina_elems);
		ina_job_cfg j;
		aring_job(p.get(), k, &j);
		a->Install(j);
	}
	SimAlgos out;
	for (unsigned i = 0; i < world; i++)
		out.emplace_back(new ArRank(net, net.hosts.Get(i), i, p, c.ina_cc));
	return out;
}
