/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-sim: one algorithm, one message size, on the trial's fabric in
 * ns-3; every rank computes (the trial's noise model, hcl_noise) then
 * all-reduces, iterations after warm-up.  Prints one JSON object: the
 * time per call (each rank's call from when it was ready to its result,
 * the mean over ranks and timed iterations, as ina-allreduce-perf reports
 * it), the iteration times, every drop by its reason, and the simulator's
 * own run time.
 *   swemu-sim --algorithm=ps-ina --racks=2 --hostsPerRack=4 --inaRacks=2 --size=1M
 * (ns-3's option syntax; --help lists them). */
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "sim.h"

extern "C" {
#include "parse.h"
}

using namespace ns3;

SimPattern::SimPattern(unsigned rank, unsigned world) : rank(rank)
{
	const size_t n = SIM_INPUT_PERIOD + INA_MAX_ELEMS;
	float per[SIM_INPUT_PERIOD] = { 0 }; /* the sum, once per residue */
	for (unsigned k = 0; k < SIM_INPUT_PERIOD; k++)
		for (unsigned r = 0; r < world; r++) /* small integers: exact in any order */
			per[k] += sim_input(r, k);
	std::vector<float> x(n), sum(n);
	for (size_t i = 0; i < n; i++) {
		x[i] = sim_input(rank, i);
		sum[i] = per[i % SIM_INPUT_PERIOD];
	}
	in.resize(n * 4);
	want.resize(n * 4);
	hcl_ina_swap_elems(in.data(), x.data(), n, 4);
	hcl_ina_swap_elems(want.data(), sum.data(), n, 4);
}

std::string SimPattern::Check(size_t i, const uint8_t *payload, size_t n) const
{
	const uint8_t *w = want.data() + (i % SIM_INPUT_PERIOD) * 4;
	if (!memcmp(payload, w, n * 4))
		return "";
	size_t k = 0;
	while (k < n && !memcmp(payload + 4 * k, w + 4 * k, 4))
		k++;
	float got, exp;
	hcl_ina_swap_elems(&got, payload + 4 * k, 1, 4);
	hcl_ina_swap_elems(&exp, w + 4 * k, 1, 4);
	return "rank " + std::to_string(rank) + ": element " + std::to_string(i + k) + " is " + std::to_string(got) +
	       ", not " + std::to_string(exp);
}

/* When every rank became ready for each call (ns; simulated time). */
struct ReadyTable {
	std::vector<std::vector<int64_t>> at; /* [iteration][rank] */
};

/* One rank's timed iteration, in ns of simulated time: the parts the host
 * library's timing trace has (docs/PACING.md). */
struct IterTimes {
	int64_t begin, ready, start, end; /* compute began; ready; called (after pacing); result */
};

/* One rank's iterations: compute, call, record, again.  With pacing
 * (ring/hcl_pace: the host library's rule), a rank that was ready early
 * for every one of its last calls waits part of that before the next. */
struct RankLoop {
	unsigned rank;
	SimAlgo *algo;
	size_t bytes = 0;		       /* each call's (no workload) */
	const hcl_workload *wl = nullptr; /* training steps: buckets during the backward */
	unsigned bucket = 0;
	double f = 1; /* this step's compute / the profile's */
	hcl_noise z;
	hcl_pace pace;
	bool paced = false;
	ReadyTable *ready;
	unsigned iter = 0, total = 0, warmup = 0;
	Time ready_at, iter_start, start_at, bucket_ready;
	int64_t step_sum_ns = 0; /* the steps so far: the pacing rule's period */
	unsigned steps = 0;
	std::vector<IterTimes> timed;
	unsigned paced_calls = 0; /* calls the pacing rule held back */
	unsigned *running;

	void Next()
	{
		if (iter == total) {
			if (--*running == 0)
				Simulator::Stop(); /* the transports' timers would run on */
			return;
		}
		iter_start = Simulator::Now();
		if (wl) { /* ring/hcl_perf_steps.c's step: the noise stretches the whole compute */
			f = hcl_noise_compute_ms(&z) / (wl->fwd_ms + wl->bwd_ms);
			bucket = 0;
			Simulator::Schedule(MsOfStep(hcl_workload_ready(wl, 0, f)), &RankLoop::Bucket, this);
			return;
		}
		Simulator::Schedule(MicroSeconds((int64_t)(hcl_noise_compute_ms(&z) * 1000)), &RankLoop::Ready, this);
	}
	/* From now, the time until ms into this step (0 if it has passed). */
	Time MsOfStep(double ms) const
	{
		Time at = iter_start + NanoSeconds((int64_t)(ms * 1e6));
		return at > Simulator::Now() ? at - Simulator::Now() : Time(0);
	}
	/* A bucket's call, paced as the library paces a marked iteration
	 * (ring/hcl_sync.c): the step's first bucket waits the rule's delay,
	 * learnt from how early this rank was at the first bucket of the last
	 * steps; the others follow in order (ready->at holds every bucket of
	 * every step). */
	void Bucket()
	{
		const Time now = Simulator::Now();
		if (bucket == 0) /* the step's first call: when it became ready */
			start_at = ready_at = now;
		bucket_ready = now;
		ready->at[iter * wl->nbuckets + bucket][rank] = now.GetNanoSeconds();
		const int64_t delay = paced && bucket == 0 ? pace.delay_ns : 0;
		paced_calls += delay > 0;
		Simulator::Schedule(NanoSeconds(delay), &RankLoop::BucketCall, this);
	}
	void BucketCall() { algo->Start(wl->buckets[bucket].bytes, [this] { BucketDone(); }); }
	void BucketDone()
	{
		if (paced && bucket == 0) {
			int64_t last = 0;
			for (int64_t t : ready->at[iter * wl->nbuckets + bucket])
				last = std::max(last, t);
			const int64_t period = steps ? step_sum_ns / steps : (Simulator::Now() - iter_start).GetNanoSeconds();
			hcl_pace_update(&pace, last - bucket_ready.GetNanoSeconds(), period);
		}
		if (++bucket < wl->nbuckets) { /* in order, one after another, each from its ready time */
			Simulator::Schedule(MsOfStep(hcl_workload_ready(wl, bucket, f)), &RankLoop::Bucket, this);
			return;
		}
		/* the step ends with the backward too; what it did not hide is the
		 * "call" of the summary (ready = the end of the compute) */
		ready_at = iter_start + NanoSeconds((int64_t)(hcl_workload_bwd_end(wl, f) * 1e6));
		start_at = ready_at;
		Simulator::Schedule(MsOfStep(hcl_workload_bwd_end(wl, f)), &RankLoop::Done, this);
	}
	void Ready()
	{
		ready_at = Simulator::Now();
		ready->at[iter][rank] = ready_at.GetNanoSeconds();
		paced_calls += paced && pace.delay_ns > 0;
		Simulator::Schedule(NanoSeconds(paced ? pace.delay_ns : 0), &RankLoop::Call, this);
	}
	void Call()
	{
		start_at = Simulator::Now();
		algo->Start(bytes, [this] { Done(); });
	}
	void Done()
	{
		const Time now = Simulator::Now();
		step_sum_ns += (now - iter_start).GetNanoSeconds();
		steps++;
		if (iter >= warmup) /* the pacing wait is part of the call, as in the library */
			timed.push_back({ iter_start.GetNanoSeconds(), ready_at.GetNanoSeconds(),
					  start_at.GetNanoSeconds(), now.GetNanoSeconds() });
		if (paced && !wl) { /* every rank was ready before anyone's call could end */
			int64_t last = 0;
			for (int64_t t : ready->at[iter])
				last = std::max(last, t);
			hcl_pace_update(&pace, last - ready_at.GetNanoSeconds(), (now - iter_start).GetNanoSeconds());
		}
		iter++;
		Next();
	}
};

static uint64_t size_arg(const std::string &name, const std::string &v, bool rate)
{
	uint64_t x = 0;
	if ((rate ? parse_rate(v.c_str(), &x) : parse_size(v.c_str(), &x)) != 0)
		throw std::runtime_error(name + ": '" + v + "' is not a " +
					 (rate ? "rate (200M, 1G)" : "size (1M, 256K)"));
	return x;
}

static double mean(const std::vector<double> &v)
{
	double s = 0;
	for (double x : v)
		s += x;
	return v.empty() ? 0 : s / (double)v.size();
}

static double cv(const std::vector<double> &v)
{
	double m = mean(v), s = 0;
	for (double x : v)
		s += (x - m) * (x - m);
	return v.size() < 2 || m == 0 ? 0 : std::sqrt(s / (double)(v.size() - 1)) / m;
}

/* The timed iterations of all ranks as the trial report reads them: the
 * time per call and per iteration (means over ranks and iterations), each
 * iteration's time (the mean over ranks), and the parts of the ranks' time
 * as the host library's timing trace splits it (docs/PACING.md: wait =
 * the latest start - own start, bounded by the call; comm = the rest). */
struct Summary {
	double call_ms = 0, iter_ms = 0, iter_cv = 0, spread_ms = 0;
	size_t calls = 0;
	std::vector<double> iter_times_ms;
	double compute_ms = 0, delay_ms = 0, wait_ms = 0, comm_ms = 0; /* summed over ranks */
};

static Summary summarise(const std::vector<RankLoop> &loops)
{
	Summary s;
	std::vector<double> calls, iters;
	size_t n = SIZE_MAX;
	for (const RankLoop &l : loops)
		n = std::min(n, l.timed.size());
	for (size_t i = 0; i < n && !loops.empty(); i++) {
		int64_t first = INT64_MAX, last = INT64_MIN;
		for (const RankLoop &l : loops) {
			first = std::min(first, l.timed[i].start);
			last = std::max(last, l.timed[i].start);
		}
		double it = 0;
		for (const RankLoop &l : loops) {
			const IterTimes &t = l.timed[i];
			const int64_t call = t.end - t.ready, delay = t.start - t.ready;
			const int64_t wait = std::min(last - t.start, call - delay);
			calls.push_back((double)call / 1e6);
			iters.push_back((double)(t.end - t.begin) / 1e6);
			it += (double)(t.end - t.begin) / 1e6;
			s.compute_ms += (double)(t.ready - t.begin) / 1e6;
			s.delay_ms += (double)delay / 1e6;
			s.wait_ms += (double)wait / 1e6;
			s.comm_ms += (double)(call - delay - wait) / 1e6;
		}
		s.iter_times_ms.push_back(it / (double)loops.size());
		s.spread_ms += (double)(last - first) / 1e6 / (double)n;
	}
	s.call_ms = mean(calls);
	s.iter_ms = mean(iters);
	s.iter_cv = cv(iters);
	s.calls = calls.size();
	return s;
}

static std::string json_list(const std::vector<double> &v)
{
	std::string out = "[";
	char one[32];
	for (size_t i = 0; i < v.size(); i++) {
		snprintf(one, sizeof(one), "%s%.3f", i ? ", " : "", v[i]);
		out += one;
	}
	return out + "]";
}

static int run(int argc, char **argv)
{
	SimCfg c;
	std::string host_rate = "200M", uplink_rate = "", host_buffer = "512K", uplink_buffer = "512K", size = "1M",
		    hosts_per_rack = "4";
	/* a calendar queue: 5-10% faster than ns-3's default (a map) on the
	 * scale study's runs, the same events in the same order (the answers
	 * match to the bit); --SchedulerType= still chooses */
	GlobalValue::Bind("SchedulerType", StringValue("ns3::CalendarScheduler"));
	CommandLine cmd("swemu-sim");
	cmd.Usage("swemu-sim: the trial's fabric in ns-3 with the project's INA engine in the switches "
		  "(docs/SCALE.md).  Prints one JSON object.");
	cmd.AddValue("algorithm", "ring, hier, ps, ps-ina or agent-ring", c.algorithm);
	cmd.AddValue("racks", "ToRs under the spine", c.racks);
	cmd.AddValue("hostsPerRack", "hosts behind each ToR, or per rack (\"3,2,3\")", hosts_per_rack);
	cmd.AddValue("inaRacks", "racks whose ToR aggregates (the first ones; ps-ina, agent-ring)", c.ina_racks);
	cmd.AddValue("inaRackList", "the racks whose ToR aggregates, \"1,3\" or \"none\" (instead of inaRacks)",
		     c.ina_rack_list);
	cmd.AddValue("hostRate", "host links, bit/s (K, M, G)", host_rate);
	cmd.AddValue("uplinkRate", "ToR uplinks, one for all or per rack (\"R0,R1\"; default: the rack's hosts x "
				   "hostRate / oversubscription)",
		     uplink_rate);
	cmd.AddValue("oversubscription", "of the uplinks", c.oversubscription);
	cmd.AddValue("hostBuffer", "tail-drop queue towards each host, bytes", host_buffer);
	cmd.AddValue("uplinkBuffer", "tail-drop queue of each uplink direction, bytes", uplink_buffer);
	cmd.AddValue("loss", "random loss on every switch port's egress (0..0.5)", c.loss);
	cmd.AddValue("delayUs", "propagation delay of every link, one way", c.delay_us);
	cmd.AddValue("size", "all-reduce message, bytes of fp32 (K, M)", size);
	cmd.AddValue("iterations", "timed calls", c.iterations);
	cmd.AddValue("warmup", "untimed calls first", c.warmup);
	cmd.AddValue("computeMs", "compute before each call", c.compute_ms);
	cmd.AddValue("jitter", "compute noise: normal:SD_MS, exp:MEAN_MS, hiccup:PROB:MS or none", c.jitter);
	cmd.AddValue("straggler", "RANK:FACTOR[,...]", c.straggler);
	cmd.AddValue("seed", "of the noise and the loss", c.seed);
	cmd.AddValue("inaElems", "elements per INA packet", c.ina_elems);
	cmd.AddValue("inaSlots", "INA packets in flight per rank (shared by the PS shards)", c.ina_slots);
	cmd.AddValue("psShards", "software PS shards, 1 to the hosts (0: one per host, at most 16)", c.ps_shards);
	cmd.AddValue("psRackAgg",
		     "ps, ps-ina: a software aggregator per plain rack under the PS: always, never, or auto "
		     "(ps-ina with 3 racks or more, ps past 256 contributors)",
		     c.ps_rack_agg);
	cmd.AddValue("ringChannels", "rings a call of >= 2 MiB runs on", c.ring_channels);
	cmd.AddValue("pace", "the pacing layer's rule (docs/PACING.md)", c.pace);
	std::string background;
	cmd.AddValue("background", "another job's traffic: each host to its peer in the next rack, bit/s each (K, M, G)",
		     background);
	cmd.AddValue("limitS", "simulated seconds after which unfinished ranks are an error", c.limit_s);
	cmd.AddValue("hostPacketNs",
		     "a host's CPU time per datagram it receives, one at a time (0: none; docs/SCALE.md, "
		     "\"The host's CPU\")",
		     c.host_packet_ns);
	cmd.AddValue("ecn", "switch queues mark ECN CE past this share of their buffer (0: never; docs/SCALE.md, "
			    "\"Congestion control\")",
		     c.ecn);
	cmd.AddValue("inaCc", "the INA windows shrink on marks (ring/hcl_ina_cc.h)", c.ina_cc);
	std::string workload;
	cmd.AddValue("workload", "training steps of this profile (configs/workloads/*.cfg) instead of --size and "
				 "--computeMs",
		     workload);
	cmd.Parse(argc, argv);

	if (c.jitter == "none")
		c.jitter.clear();
	c.host_rate = size_arg("hostRate", host_rate, true);
	std::vector<std::string> ups = sim_split_list(uplink_rate), sizes = sim_split_list(hosts_per_rack);
	if (ups.size() == 1)
		c.uplink_rate = size_arg("uplinkRate", ups[0], true);
	else
		for (auto &u : ups)
			c.uplink_rates.push_back(size_arg("uplinkRate", u, true));
	if (sizes.empty())
		throw std::runtime_error("hostsPerRack: empty");
	for (auto &h : sizes) {
		char *end;
		unsigned long v = strtoul(h.c_str(), &end, 10);
		if (h.empty() || *end || v < 1 || v > 100000)
			throw std::runtime_error("hostsPerRack: '" + hosts_per_rack + "' is not a count or a list of counts");
		if (sizes.size() == 1)
			c.hosts_per_rack = (unsigned)v;
		else
			c.rack_sizes.push_back((unsigned)v);
	}
	c.host_buffer = size_arg("hostBuffer", host_buffer, false);
	c.background_bps = background.empty() ? 0 : size_arg("background", background, true);
	c.uplink_buffer = size_arg("uplinkBuffer", uplink_buffer, false);
	c.size = size_arg("size", size, false);
	hcl_workload wl = {};
	char why[512];
	if (!workload.empty()) {
		if (hcl_workload_load(workload.c_str(), &wl, why, sizeof(why)) < 0)
			throw std::runtime_error(std::string("workload: ") + why);
		c.size = wl.max_bytes; /* the largest call; each is its bucket's */
		c.compute_ms = wl.fwd_ms + wl.bwd_ms;
	}
	std::unique_ptr<hcl_workload, void (*)(hcl_workload *)> wl_free(&wl, hcl_workload_free);
	if (c.iterations < 1)
		throw std::runtime_error("iterations must be at least 1");
	if (c.limit_s <= 0)
		throw std::runtime_error("limitS must be positive");

	sim_ina_racks(c);
	unsigned ina_racks = 0;
	for (unsigned r = 0; r < c.racks; r++)
		ina_racks += c.IsIna(r);

	auto t0 = std::chrono::steady_clock::now();
	SimNet net;
	sim_build(c, net);
	sim_background(c, net);
	SimAlgos algos;
	if (c.algorithm == "ring")
		algos = sim_ring_create(c, net);
	else if (c.algorithm == "ps" || c.algorithm == "ps-ina")
		algos = sim_ps_create(c, net, c.algorithm == "ps-ina");
	else if (c.algorithm == "hier")
		algos = sim_hier_create(c, net);
	else if (c.algorithm == "agent-ring")
		algos = sim_aring_create(c, net);
	else
		throw std::runtime_error("algorithm '" + c.algorithm + "': want ring, hier, ps, ps-ina or agent-ring");

	std::vector<RankLoop> loops(c.hosts());
	unsigned running = c.hosts();
	ReadyTable ready;
	ready.at.assign((size_t)(c.warmup + c.iterations) * (workload.empty() ? 1 : wl.nbuckets),
			std::vector<int64_t>(c.hosts(), 0));
	for (unsigned i = 0; i < c.hosts(); i++) {
		RankLoop &l = loops[i];
		l.rank = i;
		l.algo = algos[i].get();
		l.bytes = c.size;
		l.wl = workload.empty() ? nullptr : &wl;
		l.total = c.warmup + c.iterations;
		l.warmup = c.warmup;
		l.running = &running;
		l.ready = &ready;
		l.paced = c.pace;
		hcl_pace_init(&l.pace, nullptr);
		l.z = hcl_noise{};
		l.z.compute_ms = c.compute_ms;
		l.z.slow = 1;
		if (hcl_noise_parse_jitter(c.jitter.c_str(), &l.z) != 0)
			throw std::runtime_error("jitter: '" + c.jitter +
						 "' is not normal:SD, exp:MEAN or hiccup:P:MS");
		if (!c.straggler.empty() &&
		    hcl_noise_parse_stragglers(c.straggler.c_str(), (int)i, (int)c.hosts(), &l.z.slow) != 0)
			throw std::runtime_error("straggler: '" + c.straggler + "' is not RANK:FACTOR[,...]");
		hcl_noise_seed(&l.z, c.seed, (int)i);
		Simulator::ScheduleNow(&RankLoop::Next, &l);
	}
	Simulator::Stop(Seconds(c.limit_s));
	Simulator::Run();
	double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	std::string err;
	unsigned paced_calls = 0;
	for (const RankLoop &l : loops)
		paced_calls += l.paced_calls;
	for (unsigned i = 0; i < c.hosts(); i++)
		if (err.empty() && !algos[i]->error.empty())
			err = algos[i]->error;
	const Summary sum = summarise(loops);
	if (err.empty() && running)
		err = std::to_string(running) + " ranks did not finish in " + std::to_string((int)c.limit_s) +
		      " s of simulated time";
	double sim_s = Simulator::Now().GetSeconds();
	std::string eng = "{";
	std::map<std::string, uint64_t> eng_drops;
	for (const auto &a : net.aggs)
		a->AddDrops(eng_drops);
	for (const auto &d : eng_drops)
		eng += (eng.size() > 1 ? ", \"" : "\"") + d.first + "\": " + std::to_string(d.second);
	eng += "}";
	/* the busiest link direction: its transmit time per iteration */
	const SimLinkLoad *busiest = nullptr;
	for (const auto &l : net.loads)
		if (!busiest || (double)l->bytes / (double)l->rate > (double)busiest->bytes / (double)busiest->rate)
			busiest = l.get();
	const double per_iter = 1.0 / (c.warmup + c.iterations);
	Simulator::Destroy();
	printf("{\"algorithm\": \"%s\", \"hosts\": %u, \"racks\": %u, \"ina_racks\": %u, \"size\": %llu, "
	       "\"host_rate\": %llu, \"loss\": %g, ",
	       c.algorithm.c_str(), c.hosts(), c.racks,
	       c.algorithm == "ps-ina" || c.algorithm == "agent-ring" ? ina_racks : 0, (unsigned long long)c.size,
	       (unsigned long long)c.host_rate, c.loss);
	printf("\"time_ms\": %.3f, \"iteration_ms\": %.3f, \"iteration_cv\": %.4f, \"paced\": %s, "
	       "\"paced_calls\": %u, \"calls\": %zu, ",
	       sum.call_ms, sum.iter_ms, sum.iter_cv, c.pace ? "true" : "false", paced_calls, sum.calls);
	printf("\"iteration_times_ms\": %s, \"spread_mean_ms\": %.3f, \"parts_ms\": {\"compute\": %.3f, "
	       "\"delay\": %.3f, \"wait\": %.3f, \"comm\": %.3f}, ",
	       json_list(sum.iter_times_ms).c_str(), sum.spread_ms, sum.compute_ms, sum.delay_ms, sum.wait_ms,
	       sum.comm_ms);
	printf("\"tail_drops\": %llu, \"loss_drops\": %llu, \"other_drops\": %llu, "
	       "\"ecn_marks\": %llu, \"engine_drops\": %s, ",
	       (unsigned long long)net.drops.tail, (unsigned long long)net.drops.loss,
	       (unsigned long long)net.drops.other, (unsigned long long)net.drops.marks, eng.c_str());
	if (!workload.empty()) /* a step's compute, the mean over ranks and steps */
		printf("\"workload\": {\"model\": \"%s\", \"buckets\": %u, \"bytes\": %llu, \"compute_ms\": %.3f}, ", wl.model,
		       wl.nbuckets, (unsigned long long)wl.total_bytes, sum.calls ? sum.compute_ms / (double)sum.calls : 0);
	if (busiest) /* every call's, warm-ups and another job's traffic included */
		printf("\"busiest_link\": {\"link\": \"%s\", \"mb_per_iteration\": %.3f, \"ms_per_iteration\": %.3f}, ",
		       busiest->name.c_str(), (double)busiest->bytes * per_iter / 1e6,
		       (double)busiest->bytes * 8 * per_iter / (double)busiest->rate * 1e3);
	printf("\"simulated_s\": %.3f, \"wall_s\": %.2f, \"error\": \"%s\"}\n", sim_s, wall, err.c_str());
	return err.empty() ? 0 : 1; /* algos, then net's engines, go after the simulator */
}

int main(int argc, char **argv)
{
	try {
		return run(argc, argv);
	} catch (const std::exception &e) {
		fprintf(stderr, "swemu-sim: %s\n", e.what());
		return 2;
	}
}
