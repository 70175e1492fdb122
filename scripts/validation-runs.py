#!/usr/bin/env python3
"""Writes bench/validation/runs/{a100,h100,h100-moe,torchtitan-h100,torchtitan-a100,h100-bridge-dense,llm-foundry}.yaml, the dev sets in the runs-file format that
`strata calibrate --from-runs` and `strata validate --runs` read (calibration/measured_runs.h),
from the published sets beside them (bench/validation/*.yaml). Run from the repository root
after changing a published set; the outputs are committed. Throughputs become seconds per
iteration with the FLOP formula each source states (the TorchTitan rows keep their tokens/s per GPU,
which strata converts by tokens per step); nothing is fitted here.
    python3 scripts/validation-runs.py [--mcore-layouts FILE] [--only a100|h100|gemm|h100-moe|torchtitan|h100-bridge-dense|llm-foundry]
--only: write that one set (h100-moe and torchtitan need no layouts file; `h100` without --mcore-layouts would
drop the Megatron-Core rows, so regenerate it only with that file).
--mcore-layouts: the layouts strata's search chose for the Megatron-Core rows, whose micro-batch,
vpp, SP and recompute the source leaves unknown (strata_bench_prediction_error_mcore output)."""
import sys, yaml

def flow(d):
    return "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"

def gpt(name, layers, hidden, heads, vocab, seq, tied=True):
    return {"name": name, "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads,
            "ffn": 4 * hidden, "vocab": vocab, "seq_len": seq, "tied_embeddings": str(tied).lower()}

def row(out, rid, model, strategy, seconds, source, stack=None, sweep=None, use="fit", precision=None,
        split=None, cluster=None, note=None, stack_settings=None):
    r = {"id": rid, "model": model if isinstance(model, str) else flow(model)}
    if cluster: r["cluster"] = cluster
    if stack: r["stack"] = stack
    if stack_settings:  # stack keys the job changed (runs-file key stack_settings), nested maps
        nest = lambda v: flow({k: nest(x) for k, x in v.items()}) if isinstance(v, dict) else str(v).lower()
        r["stack_settings"] = nest(stack_settings)
    r["strategy"] = flow(strategy)
    if split:  # Megatron-LM's uneven split, by its flags (runs-file key pipeline_split)
        r["pipeline_split"] = flow({k: f'"{v}"' if isinstance(v, str) else str(v).lower() for k, v in split.items()})
    if precision: r["precision"] = precision
    r["measured"] = flow({"iteration_s": f"{seconds:.6g}"})
    r["source"] = f'"{source}"'
    if sweep: r["sweep"] = f'"{sweep}"'
    if use != "fit": r["use"] = use
    if note: r["note"] = f'"{note}"'
    out.append("  - " + flow(r))

def strat(tp, pp, dp, mbs, gbs, vpp=1, recompute="none", sp=False, zero=0, cp=1):
    return {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "vpp": vpp, "micro_batch": mbs, "global_batch": gbs,
            "zero": zero, "recompute": recompute, "sequence_parallel": str(sp).lower(),
            "schedule": "interleaved" if vpp > 1 else "1f1b"}

def megatron_flops(B, s, l, h, V):
    """Model FLOPs of one step with full activation recompute, as Narayanan et al. 2021 count them."""
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))

def a100():
    out = []
    t1 = yaml.safe_load(open("bench/validation/megatron-2021.yaml"))
    s, V = t1["seq_len"], t1["vocab"]
    for r in t1["runs"]:
        l, h, B = r["layers"], r["hidden"], r["global_batch"]
        F = megatron_flops(B, s, l, h, V)
        dp = r["gpus"] // (r["tp"] * r["pp"])
        row(out, f"T1-{r['params_b']:g}B", f"megatron-{r['params_b']:g}b",
            strat(r["tp"], r["pp"], dp, r["micro_batch"], B, r["vpp"], "full"), F / (r["gpus"] * r["tflops_per_gpu"] * 1e12),
            "Narayanan et al. 2021 Table 1 (megatron-2021.yaml)",
            # SC21 run_table_1.sh: PyTorch DDP without pipelining, local DDP otherwise
            stack="megatron-2021-torch-ddp" if r["pp"] == 1 else "megatron-2021")
    ex = yaml.safe_load(open("bench/validation/narayanan-2021-extra.yaml"))
    s, V = ex["seq_len"], ex["vocab"]
    for r in ex["runs"]:
        l, h, B = r["layers"], r["hidden"], r["global_batch"]
        F = megatron_flops(B, s, l, h, V)
        dp = r["gpus"] // (r["tp"] * r["pp"])
        vpp = r["vpp"] or 1
        row(out, r["id"], gpt(f"gpt-{r['params_b']}b", l, h, r["heads"], V, s), strat(r["tp"], r["pp"], dp, r["micro_batch"], B, vpp, "full"),
            F / (r["gpus"] * r["tflops_per_gpu"] * 1e12), "Narayanan et al. 2021 Table 2 + Megatron-LM README (narayanan-2021-extra.yaml)",
            stack="megatron-2021")
    for p in ex["points"]:
        l, h, B = p["layers"], p["hidden"], p["global_batch"]
        F = megatron_flops(B, s, l, h, V)
        vpp = p["vpp"] or 1
        sg = p.get("scatter_gather")
        if sg is False: continue  # the runs without Megatron's scatter/gather optimisation: another code path
        sweep = f"{p['sweep']} GBS {B}"
        row(out, f"{p['sweep']}-tp{p['tp']}pp{p['pp']}dp{p['dp']}mbs{p['micro_batch']}vpp{vpp}gbs{B}",
            gpt(f"{p['sweep']}-l{l}-h{h}", l, h, p["heads"], V, s),
            strat(p["tp"], p["pp"], p["dp"], p["micro_batch"], B, vpp, "full"),
            F / (p["gpus"] * p["tflops_per_gpu"] * 1e12), "Narayanan et al. 2021 Figures 11-16, 18 (read by eye)",
            stack="megatron-2021", sweep=sweep, use="check")
    bl = yaml.safe_load(open("bench/validation/bloom-2022-a100.yaml"))
    s, V = bl["seq_len"], bl["vocab"]
    for r in bl["runs"]:
        m = gpt("bloom-176b", 70, 14336, 112, V, s)
        m["ffn"] = 4 * 14336
        # DeepSpeed's 'type:transformer|embedding' partition: the embeddings count as blocks.
        split = {"account_for_embedding": True, "account_for_loss": True}
        # The bf16 optimizer shards the fp32 master weights and Adam state over dp: ZeRO 1.
        row(out, r["id"], m, strat(r["tp"], r["pp"], r["dp"], r["micro_batch"], r["global_batch"], 1, "full", zero=1),
            r["iteration_s"], "BigScience tr11-176B-ml logs, Jean Zay A100 (bloom-2022-a100.yaml)",
            stack="bigscience-2022-bf16", sweep=r.get("sweep"), use="check", split=split,
            cluster="../clusters/jean-zay-a100.yaml")
    head = ("# Dev set, DGX A100 (written by scripts/validation-runs.py from megatron-2021.yaml and\n"
            "# narayanan-2021-extra.yaml; see those files for every source and derivation). Seconds per\n"
            "# iteration = F / (gpus x published TFLOP/s), F = 96 B s l h^2 (1 + s/6h + V/16lh) (recompute\n"
            "# counted, as the paper does). Figure points are `use: check`: ranking only, never fitted.\n"
            "# The BLOOM rows (bloom-2022-a100.yaml) are logged iteration times on Jean Zay's A100 nodes\n"
            "# (their own cluster file) on stack bigscience-2022-bf16, `use: check` (the stack names what it misses).\n"
            "source: \"Narayanan et al. 2021\"\ndefaults: {cluster: dgx-a100}\nruns:\n")
    open("bench/validation/runs/a100.yaml", "w").write(head + "\n".join(out) + "\n")

def h100(layouts):
    out = []
    d = yaml.safe_load(open("bench/validation/dgxc-2025-h100.yaml"))
    models = d["models"]
    for r in d["runs"]:
        m = dict(models[r["model"]])
        for k in ("tied_embeddings",):
            if k in m: m[k] = str(m[k]).lower()
        dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
        row(out, r["id"], m, strat(r["tp"], r["pp"], dp, r["micro_batch"], r["global_batch"], r["vpp"], "none", r["sp"], 1, r["cp"]),
            r["step_s"], "NVIDIA dgxc-benchmarking v25.02 (dgxc-2025-h100.yaml)", stack="nemo-2024-perf",
            precision=r.get("precision"))
    mc = yaml.safe_load(open("bench/validation/mcore-2024-h100.yaml"))
    s, V = mc["seq_len"], mc["vocab"]
    for r in mc["runs"]:
        if r["id"] not in layouts: continue
        mbs, vpp, sp, rc = layouts[r["id"]]
        l, h, B = r["layers"], r["hidden"], r["global_batch"]
        F = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))
        row(out, r["id"], gpt(r["id"], l, h, r["heads"], V, s, tied=False),
            strat(r["tp"], r["pp"], r["dp"], mbs, B, vpp, rc, sp, 1), F / (r["gpus"] * r["tflops_per_gpu"] * 1e12),
            "Megatron-LM README, Megatron-Core r0.8.0 (mcore-2024-h100.yaml)", stack="mcore-2024")
    head = ("# Dev set, DGX H100 (written by scripts/validation-runs.py from dgxc-2025-h100.yaml and\n"
            "# mcore-2024-h100.yaml; see those files for every source and derivation). The Megatron-Core\n"
            "# rows leave micro-batch, vpp, SP and recompute unknown: their layouts are the ones strata's\n"
            "# search picks under the row's tp/pp/dp (an assumption, not a published setting). The MoE rows\n"
            "# (h100-moe.yaml) are part of the H100 dev set: included, fitted or checked as each row says.\n"
            "include: [h100-moe.yaml]\n"
            "defaults: {cluster: dgx-h100}\nruns:\n")
    open("bench/validation/runs/h100.yaml", "w").write(head + "\n".join(out) + "\n")

def h100_moe():
    """bench/validation/runs/h100-moe.yaml from moe-h100.yaml: one row per published job (rows
    marked `runs: false` stay in the source file only); every row `use: check` for now."""
    d = yaml.safe_load(open("bench/validation/moe-h100.yaml"))
    models, sources = d["models"], d["sources"]
    out = []
    for r in d["runs"]:
        if r.get("runs") is False: continue
        m = models[r["model"]]
        if isinstance(m, dict):
            m = dict(m)
            if "moe" in m: m["moe"] = flow(m["moe"])
            if "mla" in m: m["mla"] = flow(m["mla"])
            m["tied_embeddings"] = str(m["tied_embeddings"]).lower()
            if "qk_norm" in m: m["qk_norm"] = str(m["qk_norm"]).lower()
            if "layers" in r or "seq" in r:
                m["layers"] = r.get("layers", m["layers"])
                m["seq_len"] = r.get("seq", m["seq_len"])
                m["name"] = f"{m['name']}-l{m['layers']}-s{m['seq_len']}"
            seq = m["seq_len"]
        else:
            seq = r.get("seq", 4096)  # catalog deepseek-v3: seq_len 4096
        dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
        st = strat(r["tp"], r["pp"], dp, r["mbs"], r["gbs"], r["vpp"], r["recompute"], r["sp"], r["zero"], r["cp"])
        st["ep"], st["etp"] = r["ep"], r["etp"]
        if "recompute_modules" in r:  # Megatron's --recompute-modules, as the source gives them
            st["recompute_modules"] = "[" + ", ".join(r["recompute_modules"]) + "]"
        if r.get("ep_overlap"):  # Megatron-Core's --overlap-moe-expert-parallel-comm
            st["ep_overlap"] = "true"
        if r.get("delay_wgrad"):  # Megatron-Core's --delay-wgrad-compute
            st["delay_wgrad"] = "true"
        if "step_s" in r:
            seconds = r["step_s"]
        else:  # tokens/s/GPU -> seconds per iteration
            seconds = r["gbs"] * seq / (r["tokens_per_s_per_gpu"] * r["gpus"])
        src = sources[r["src"]]
        note = r["note"].replace('"', "'") if r.get("note") else None
        row(out, r["id"], m, st, seconds, src["cite"].replace('"', "'"), stack=r.get("stack", src.get("stack")),
            sweep=r.get("sweep"), use=r.get("use", "check"), precision=r.get("precision"), split=r.get("split"),
            note=note, stack_settings=r.get("stack_settings"))
    head = ("# MoE rows, DGX H100 (written by scripts/validation-runs.py from moe-h100.yaml; see that file for\n"
            "# every source, derivation and what strata cannot express yet). Rows `use: check` unless that\n"
            "# file says `use: fit` (the Model-Zoo sweep, settings pinned at its commits); tokens/s/GPU\n"
            "# converted as gbs x seq / (tokens/s/GPU x gpus). Settings strata has no knob for (dispatcher, EP\n"
            "# overlap, module recompute, MTP, uneven stages, token drop where not on the model) are in each\n"
            "# row's note. sweep mz-qwen3-235b-256: four layouts of one model on the same 256 GPUs.\n"
            "defaults: {cluster: dgx-h100}\nruns:\n")
    open("bench/validation/runs/h100-moe.yaml", "w").write(head + "\n".join(out) + "\n")

def h100_bridge_dense():
    """bench/validation/runs/h100-bridge-dense.yaml from bridge-h100-dense.yaml: Megatron-Bridge's dense
    Llama rows on DGX H100, one per release (the same job recurs), every row `use: check`; rows marked
    `runs: false` stay in the source file only. Catalog models at seq 8192."""
    d = yaml.safe_load(open("bench/validation/bridge-h100-dense.yaml"))
    models, sources = d["models"], d["sources"]
    out = []
    for r in d["runs"]:
        if r.get("runs") is False: continue
        seq = 8192  # catalog llama3-8b / -70b / -405b: seq_len 8192
        dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
        st = strat(r["tp"], r["pp"], dp, r["mbs"], r["gbs"], r["vpp"], r["recompute"], r["sp"], r["zero"], r["cp"])
        seconds = r["gbs"] * seq / (r["tokens_per_s_per_gpu"] * r["gpus"])
        src = sources[r["src"]]
        note = r["note"].replace('"', "'") if r.get("note") else None
        row(out, r["id"], models[r["model"]], st, seconds, src["cite"].replace('"', "'"),
            stack=r.get("stack", src.get("stack")), use=r.get("use", "check"), precision=r.get("precision"),
            split=r.get("split"), note=note, stack_settings=r.get("stack_settings"))
    head = ("# Dense Llama rows, DGX H100, from NVIDIA's Megatron-Bridge performance summaries 25.09-26.06 (written\n"
            "# by scripts/validation-runs.py from bridge-h100-dense.yaml; see that file for every source, commit,\n"
            "# setting and what strata cannot express). Every row `use: check`: no profile is fitted to them, so\n"
            "# their errors under the fitted H100 profile are held out. Tokens/s/GPU converted as gbs x seq /\n"
            "# (tokens/s/GPU x gpus), seq 8192. Stack nemo-2024-perf (the nearest; strata has no Megatron-Bridge\n"
            "# stack); the 25.09 8B row ran Megatron-FSDP (ZeRO-3), which that stack is told it may run by\n"
            "# stack_settings. The same job recurs across releases (70B GBS 128 / 256, 405B GBS 512 / 1536): one\n"
            "# row per release. L8B-8-mb2511 is not here (table and config contradict; see the source).\n"
            "defaults: {cluster: dgx-h100}\nruns:\n")
    open("bench/validation/runs/h100-bridge-dense.yaml", "w").write(head + "\n".join(out) + "\n")

def torchtitan():
    """bench/validation/runs/torchtitan-h100.yaml and torchtitan-a100.yaml from the source files of the
    same names: TorchTitan's published tokens/s per GPU kept as measured.tokens_per_s_per_gpu (strata
    converts: gbs x seq / (tps x gpus)); rows marked `runs: false` stay in the source files only. The
    H100 rows run on the part they ran on (clusters/grand-teton-h100.yaml) and are that device's dev set
    (`use: fit`) except Table 2's long-sequence context-parallel rows, which stay `use: check`: their
    miss grows with the sequence (a mechanism the model lacks, which a fit must not absorb). The A100
    rows are all `use: check`."""
    cites = {"tt24": "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md (820504e2), torchtitan 9dec370",
             "tp25": "pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (2887250b), torchtitan 820504e2",
             "ta24": "pytorch/torchtitan docs/performance.md (157a12c5), 64 A100, torchtitan 1ea476e9"}
    heads = {
        "h100": ("# TorchTitan (PyTorch FSDP2) rows on H100 (written by scripts/validation-runs.py from\n"
                 "# bench/validation/torchtitan-h100.yaml; see it for every source, setting and mapping), on the part\n"
                 "# they ran on: 96 GB HBM2e H100s at 500 W on Grand Teton hosts (clusters/grand-teton-h100.yaml).\n"
                 "# `use: fit`: the dev set of that device's profile (profiles/h100-sxm-96gb-500w-fitted.yaml), except\n"
                 "# Table 2's context-parallel rows at sequence 32k-256k (`use: check`: their miss grows with the\n"
                 "# sequence, a mechanism the model lacks). Published tokens/s per GPU kept as measured; strata converts\n"
                 "# to gbs x seq / (tps x gpus). Published memory (torch.cuda max reserved, GiB): measured.peak_memory_gib.\n"
                 "# Selective AC rows: TorchTitan's per-op policy mapped to strata's selective.\n"
                 "defaults: {cluster: ../clusters/grand-teton-h100.yaml}\nruns:\n"),
        "a100": ("# TorchTitan (PyTorch FSDP2) rows on A100 (written by scripts/validation-runs.py from\n"
                 "# bench/validation/torchtitan-a100.yaml; see it for every source, setting and mapping). All rows\n"
                 "# `use: check`. Published tokens/s per GPU kept as measured; strata converts to gbs x seq / (tps x gpus).\n"
                 "# The rows' hosts are unstated; dgx-a100 assumed. Selective AC rows: TorchTitan's per-op policy\n"
                 "# mapped to strata's selective.\n"
                 "defaults: {cluster: dgx-a100}\nruns:\n")}
    for dev in ("h100", "a100"):
        f = f"torchtitan-{dev}.yaml"
        d = yaml.safe_load(open("bench/validation/" + f))
        out = []
        for r in d["runs"]:
            if r.get("runs") is False: continue
            m = dict(d["models"][r["model"]])
            if r["seq"] != m["seq_len"]: m["name"] = f"{m['name']}-s{r['seq']}"
            m["seq_len"] = r["seq"]
            m["tied_embeddings"] = str(m["tied_embeddings"]).lower()
            if "qk_norm" in m: m["qk_norm"] = str(m["qk_norm"]).lower()
            st = strat(r["tp"], r["pp"], r["dp"], r["lbs"], r["gbs"], 1, r["recompute"], r["tp"] > 1, 3, r["cp"])
            cite = cites[r["src"]] + (f" Table {r['table']}" if "table" in r else "") + f" ({f})"
            x = {"id": r["id"], "model": flow(m)}
            x["stack"] = "torchtitan-2024-compile" if r["compile"] else "torchtitan-2024"
            x["strategy"] = flow(st)
            if r["precision"] != "bf16": x["precision"] = r["precision"]
            meas = {"tokens_per_s_per_gpu": r["tps"]}
            if "mem_gib" in r: meas["peak_memory_gib"] = r["mem_gib"]  # max reserved
            x["measured"] = flow(meas)
            x["source"] = f'"{cite}"'
            x["use"] = "fit" if dev == "h100" and r.get("table") != 2 else "check"
            out.append("  - " + flow(x))
        open(f"bench/validation/runs/{f}", "w").write(heads[dev] + "\n".join(out) + "\n")

def llm_foundry():
    """bench/validation/runs/llm-foundry.yaml from llm-foundry.yaml: MosaicML's published MPT
    throughputs (PyTorch FSDP1), tokens/s per GPU kept as measured. The single-node 2023-10 rows run
    on stack llm-foundry-2023, the 2024-01 large-scale H100 rows on llm-foundry-2024 (13b and 30b with
    its Triton attention: stack_settings attention.kernel flash1), the A100 40GB rows on
    llm-foundry-2023 and clusters/mosaic-a100-40gb.yaml. Every row `use: check` on the shipped (or, for
    the 40GB part, the A100 fit's) profile of its device."""
    d = yaml.safe_load(open("bench/validation/llm-foundry.yaml"))
    cite = {"runs": "mosaicml/llm-foundry scripts/train/benchmarking/README.md (5e85bd62), rows of b2a43a14 (llm-foundry.yaml)",
            "runs_2024": "mosaicml/llm-foundry scripts/train/benchmarking/README.md (5e85bd62), large-scale H100 table (llm-foundry.yaml)",
            "runs_a100_40gb": "mosaicml/llm-foundry scripts/train/benchmarking/README.md (5e85bd62), A100 40GB table (llm-foundry.yaml)"}
    clusters = {"a100": "dgx-a100", "h100": "dgx-h100", "a100-40g": "../clusters/mosaic-a100-40gb.yaml"}
    out = []
    for part, stack in (("runs", "llm-foundry-2023"), ("runs_2024", "llm-foundry-2024"),
                        ("runs_a100_40gb", "llm-foundry-2023")):
        for r in d[part]:
            a = d["models"][r["model"]]
            m = {"name": f"{r['model']}-s{r['seq']}", "layers": a["layers"], "hidden": a["hidden"], "heads": a["heads"],
                 "kv_heads": a["heads"], "ffn": 4 * a["hidden"], "vocab": 50368, "seq_len": r["seq"],
                 "activation": "gelu", "norm": "layernorm", "positions": "learned", "tied_embeddings": "true"}
            gpus = r.get("gpus", 8)
            x = {"id": r["id"], "model": flow(m), "cluster": clusters[r["gpu"]], "stack": stack}
            if stack == "llm-foundry-2024" and r["attn"] != "flash2":
                x["stack_settings"] = flow({"attention": flow({"kernel": r["attn"]})})
            x["strategy"] = flow(strat(1, 1, gpus, r["mbs"], r["gbs"], 1, "full" if r["act_ckpt"] else "none", False,
                                       r.get("zero", 3)))
            x["measured"] = flow({"tokens_per_s_per_gpu": r["tps"]})
            x["source"] = f'"{cite[part]}"'
            x["use"] = "check"
            out.append("  - " + flow(x))
    head = ("# llm-foundry MPT rows, PyTorch FSDP1: one node of 8 A100 80GB or H100 80GB (2023-10), 128-512\n"
            "# H100 80GB (2024-01) and 8-128 A100 40GB (before 2023-05) (written by scripts/validation-runs.py from\n"
            "# bench/validation/llm-foundry.yaml;\n"
            "# see it for every source, setting and what is left out). All rows `use: check`: no profile saw them.\n"
            "# Published tokens/s per GPU kept as measured; strata converts to gbs x seq / (tps x gpus).\n"
            "runs:\n")
    open("bench/validation/runs/llm-foundry.yaml", "w").write(head + "\n".join(out) + "\n")

def gemm_measured_variant(profile):
    """The H100 rows again, on DGX H100 nodes whose device carries the sustained GEMM table
    measured on an H200 (same GH100 die, same clocks and tensor peaks): what the runs say
    about the other losses once GEMMs are measured, not fitted."""
    import re
    def section(lines, key):
        s = [i for i, l in enumerate(lines) if l.startswith(key + ":")][0]
        e = [i for i, l in enumerate(lines) if i > s and re.match(r"^[a-z_]+:", l)]
        return s, (e[0] if e else len(lines))
    src = open(profile).read().splitlines()
    s, e = section(src, "gemm_table")
    dev = open("costmodel/hardware/h100-sxm-80gb.yaml").read().splitlines()
    s2, e2 = section(dev, "gemm_table")
    head = ["# H100 SXM datasheet profile with the GEMM table measured on an H200 under sustained load",
            f"# (written by scripts/validation-runs.py from {profile}): for the fit that takes GEMMs as measured."]
    open("bench/validation/h100-sxm-80gb-gemm-measured.yaml", "w").write("\n".join(head + dev[:s2] + src[s:e] + dev[e2:]) + "\n")
    cl = open("costmodel/hardware/clusters/dgx-h100.yaml").read()
    cl = "\n".join(l for l in cl.splitlines() if not l.startswith("profile:")) + "\n"
    cl = cl.replace("name: dgx-h100", "name: dgx-h100-gemm-measured").replace("device: h100-sxm-80gb", "device: h100-sxm-80gb-gemm-measured.yaml")
    open("bench/validation/dgx-h100-gemm-measured.yaml", "w").write(cl)
    runs = open("bench/validation/runs/h100.yaml").read().replace("defaults: {cluster: dgx-h100}", "defaults: {cluster: ../dgx-h100-gemm-measured.yaml}")
    open("bench/validation/runs/h100-gemm-measured.yaml", "w").write(runs)

layouts, only, argv = {}, None, sys.argv[1:]
while argv:
    if argv[0] == "--mcore-layouts" and len(argv) > 1:
        for line in open(argv[1]):
            f = line.split()
            if len(f) >= 12 and f[0].startswith("MC24-"):
                mbs, vpp, sp, rc = f[-1].split("/")
                layouts[f[0]] = (int(mbs), int(vpp), sp == "sp", rc)
        argv = argv[2:]
    elif argv[0] == "--only" and len(argv) > 1:
        only, argv = argv[1], argv[2:]
    else:
        sys.exit(__doc__)
if only in (None, "a100"): a100()
if only in (None, "h100"): h100(layouts)
if only in (None, "gemm"): gemm_measured_variant("costmodel/hardware/profiles/h200-sxm-141gb-measured.yaml")
if only in (None, "h100-moe"): h100_moe()
if only in (None, "torchtitan"): torchtitan()
if only in (None, "h100-bridge-dense"): h100_bridge_dense()
if only in (None, "llm-foundry"): llm_foundry()
