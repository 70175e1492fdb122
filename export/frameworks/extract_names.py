#!/usr/bin/env python3
"""Regenerates the framework name tables in this folder from a framework's git history.

Reads source files with `git show COMMIT:PATH` and the Python `ast` module only (no
framework import, no torch): the tables hold names and types, which are facts about the
framework's configuration, not its code.

  extract_names.py megatron   GIT_DIR COMMIT > megatron_args.yaml
  extract_names.py torchtitan GIT_DIR TAG    > torchtitan_config.yaml
  extract_names.py deepspeed  GIT_DIR TAG    > deepspeed_config.yaml
  extract_names.py megatron-deepspeed GIT_DIR COMMIT > megatron_deepspeed_args.yaml
"""
import ast
import subprocess
import sys


def show(git_dir, commit, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def grep_class(git_dir, commit, name, under):
    out = subprocess.run(["git", "--git-dir", git_dir, "grep", "-l", f"^class {name}\\b",
                          commit, "--", under], capture_output=True, text=True).stdout
    paths = [l.split(":", 1)[1] for l in out.splitlines()]
    return paths[0] if paths else None


def const(node):
    return node.value if isinstance(node, ast.Constant) else None


def ann_type(ann):
    """A dataclass annotation as a table type: int, float, str, bool, list, enum:<Name>."""
    s = ast.unparse(ann)
    s = s.replace("Optional[", "").replace(" | None", "").replace("None | ", "")
    for t in ("bool", "int", "float", "str"):
        if s.rstrip("]") == t:
            return t
    if s.startswith("list") or s.startswith("List"):
        return "list"
    if s.startswith("Literal"):
        vals = [const(e) for e in ast.walk(ann) if isinstance(e, ast.Constant)]
        vals = [v for v in vals if v is not None]
        return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(vals[0]), "str") if vals else "str"
    return "other"


# ---------------------------------------------------------------- Megatron-LM
def megatron(git_dir, commit, path="megatron/training/arguments.py"):
    args = {}
    src = show(git_dir, commit, path)
    tree = ast.parse(src)
    # 1. Plain add_argument calls.
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "add_argument"):
            continue
        names = [const(a) for a in call.args if isinstance(const(a), str) and const(a).startswith("--")]
        kw = {k.arg: k.value for k in call.keywords}
        kind = "str"
        if "action" in kw and const(kw["action"]) in ("store_true", "store_false"):
            kind = "flag"
        elif "type" in kw:
            t = ast.unparse(kw["type"])
            kind = t if t in ("int", "float", "str") else "str"
        if "nargs" in kw:
            kind = "list[" + kind + "]"
        for n in names:
            args[n] = kind
    # 2. Arguments generated from dataclasses by ArgumentGroupFactory(Class, exclude=[...]).
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "ArgumentGroupFactory"):
            continue
        cls = call.args[0].id
        exclude = set()
        for k in call.keywords:
            if k.arg == "exclude":
                val = k.value
                if isinstance(val, ast.Name):  # a local list assigned just before
                    for node in ast.walk(tree):
                        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                                and node.targets[0].id == val.id and isinstance(node.value, ast.List)):
                            exclude |= {const(e) for e in node.value.elts}
                else:
                    exclude |= {const(e) for e in val.elts}
        for name, kind in dataclass_fields(git_dir, commit, cls, "megatron"):
            if name[0] in exclude:
                continue
            for n in name[1]:
                args[n] = kind
    return args


def dataclass_fields(git_dir, commit, cls, under, seen=None):
    """(field name, [flag names]), type for a dataclass and its dataclass bases."""
    path = grep_class(git_dir, commit, cls, under)
    if path is None:
        sys.exit(f"class {cls} not found under {under}")
    tree = ast.parse(show(git_dir, commit, path))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    out = []
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id not in ("object",):
            if grep_class(git_dir, commit, base.id, under):
                out += dataclass_fields(git_dir, commit, base.id, under)
    for st in node.body:
        if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
            continue
        name = st.target.id
        kind = ann_type(st.annotation)
        default = st.value
        meta_names, meta_kind, init = None, None, True
        if isinstance(default, ast.Call) and ast.unparse(default.func).endswith("field"):
            kws = {k.arg: k.value for k in default.keywords}
            if "init" in kws and const(kws["init"]) is False:
                init = False
            default = kws.get("default")
            md = kws.get("metadata")
            if isinstance(md, ast.Dict):
                for k, v in zip(md.keys, md.values):
                    if const(k) == "argparse_meta" and isinstance(v, ast.Dict):
                        for k2, v2 in zip(v.keys, v.values):
                            if const(k2) == "arg_names":
                                meta_names = [const(e) for e in v2.elts]
                            if const(k2) == "action" and const(v2) in ("store_true", "store_false"):
                                meta_kind = "flag"
                            if const(k2) == "type":
                                t = ast.unparse(v2)
                                meta_kind = t if t in ("int", "float", "str") else "str"
                            if const(k2) == "nargs":
                                meta_kind = "list[" + (meta_kind or kind) + "]"
        if not init:
            continue
        flag = "--" + name.replace("_", "-")
        if kind == "bool":
            kind = "flag"
            if default is not None and const(default) is True:
                names = ["--no-" + flag[2:], "--disable-" + flag[2:]]
            else:
                names = [flag]
        else:
            if kind == "list":
                kind = "list[" + ann_type(st.annotation.slice if isinstance(st.annotation, ast.Subscript) else st.annotation) + "]"
            names = [flag]
        if meta_names:
            names = meta_names
        if meta_kind:
            kind = meta_kind
        out.append(((name, names), kind))
    return out


# ---------------------------------------------------------------- TorchTitan
def torchtitan(git_dir, commit, path="torchtitan/config/job_config.py"):
    tree = ast.parse(show(git_dir, commit, path))
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    table = {}

    # A section's keys, then its nested sections as dotted names ("quantize.linear.float8",
    # the TOML table [quantize.linear.float8]).
    def section(name, cls):
        table[name] = {}
        nested = []
        for f in cls.body:
            if isinstance(f, ast.AnnAssign):
                t = ast.unparse(f.annotation)
                kind = ann_type(f.annotation)
                if t.startswith("list[list["):
                    kind = "list[list[str]]"
                elif kind == "list":
                    kind = "list[str]"
                if kind == "other" and t in classes:
                    kind = "table"
                    nested.append((f"{name}.{f.target.id}", classes[t]))
                table[name][f.target.id] = kind
        for sub, sub_cls in nested:
            section(sub, sub_cls)

    for st in classes["JobConfig"].body:
        if isinstance(st, ast.AnnAssign):
            section(st.target.id, classes[ast.unparse(st.annotation)])
    return table


# ---------------------------------------------------------------- DeepSpeed
def pydantic_fields(git_dir, commit, path, cls):
    """Field names (and aliases) of a DeepSpeedConfigModel section (extra keys forbidden)."""
    tree = ast.parse(show(git_dir, commit, path))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    out = {}
    for st in node.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            kind = ann_type(st.annotation)
            if ast.unparse(st.annotation) == "ZeroStageEnum":
                kind = "int"
            if kind == "other":
                kind = "table"
            out[st.target.id] = kind
            if isinstance(st.value, ast.Call):
                for k in st.value.keywords:
                    if k.arg == "alias":
                        out[const(k.value)] = kind
    return out


def string_constants(git_dir, commit, path, prefix):
    tree = ast.parse(show(git_dir, commit, path))
    return {st.targets[0].id: const(st.value) for st in tree.body
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)
            and st.targets[0].id.startswith(prefix) and isinstance(const(st.value), str)}


def deepspeed(git_dir, commit):
    """Keys DeepSpeedConfig (deepspeed/runtime/config.py) reads for the sections strata writes."""
    c = string_constants(git_dir, commit, "deepspeed/runtime/constants.py", "")
    table = {"top_level": {c["TRAIN_BATCH_SIZE"]: "int", c["TRAIN_MICRO_BATCH_SIZE_PER_GPU"]: "int",
                           c["GRADIENT_ACCUMULATION_STEPS"]: "int", c["GRADIENT_CLIPPING"]: "float",
                           c["STEPS_PER_PRINT"]: "int", c["BFLOAT16"]: "table", c["FP16"]: "table",
                           c["DATA_TYPES"]: "table", "zero_optimization": "table", "pipeline": "table",
                           "activation_checkpointing": "table"}}
    table["bf16"] = pydantic_fields(git_dir, commit, "deepspeed/runtime/precision_config.py",
                                    "DeepSpeedBF16Config")
    table["fp16"] = pydantic_fields(git_dir, commit, "deepspeed/runtime/precision_config.py",
                                    "DeepSpeedFP16Config")
    table["data_types"] = {c["GRAD_ACCUM_DTYPE"]: "str", c["PARAM_DTYPE"]: "str", c["BUFFER_DTYPE"]: "str"}
    table["zero_optimization"] = pydantic_fields(git_dir, commit, "deepspeed/runtime/zero/config.py",
                                                 "DeepSpeedZeroConfig")
    # get_pipeline_config: a dict of defaults updated by the user's keys.
    src = show(git_dir, commit, "deepspeed/runtime/config.py")
    tree = ast.parse(src)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_pipeline_config")
    d = next(n for n in ast.walk(fn) if isinstance(n, ast.Dict))
    kinds = {bool: "bool", int: "int", str: "str"}
    table["pipeline"] = {const(k): kinds.get(type(const(v)), "str") for k, v in zip(d.keys, d.values)}
    table["pipeline"]["stages"] = "int"  # default "auto" or a number of stages
    ac = string_constants(git_dir, commit, "deepspeed/runtime/activation_checkpointing/config.py", "ACT_CHKPT_")
    table["activation_checkpointing"] = {
        ac["ACT_CHKPT_PARTITION_ACTIVATIONS"]: "bool", ac["ACT_CHKPT_NUMBER_CHECKPOINTS"]: "int",
        ac["ACT_CHKPT_CONTIGUOUS_MEMORY_OPTIMIZATION"]: "bool",
        ac["ACT_CHKPT_SYNCHRONIZE_CHECKPOINT_BOUNDARY"]: "bool", ac["ACT_CHKPT_PROFILE"]: "bool",
        ac["ACT_CHKPT_CPU_CHECKPOINTING"]: "bool"}
    return table


if __name__ == "__main__":
    which, git_dir, commit = sys.argv[1:4]
    if which == "megatron-deepspeed":  # the fork's arguments.py has add_argument calls only
        for n, k in sorted(megatron(git_dir, commit, "megatron/arguments.py").items()):
            print(f"  \"{n}\": \"{k}\"")
    elif which == "megatron":
        for n, k in sorted(megatron(git_dir, commit).items()):
            print(f"  \"{n}\": \"{k}\"")
    elif which == "torchtitan":
        for sec, keys in torchtitan(git_dir, commit).items():
            print(f"  {sec}:")
            for k, v in keys.items():
                print(f"    {k}: \"{v}\"")
    elif which == "deepspeed":
        for sec, keys in deepspeed(git_dir, commit).items():
            print(f"  {sec}:")
            for k, v in keys.items():
                print(f"    {k}: \"{v}\"")
