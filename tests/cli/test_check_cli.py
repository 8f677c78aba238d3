"""`graphmend check` end to end: output formats, configuration, exit codes, bad input, safe writes."""
import json
import os
import pathlib
import stat
import subprocess

import jsonschema
import pytest

from cli_support import BIN, BREAKING, ROOT



def run(*args, stdin=None, cwd=None, timeout=120):
    return subprocess.run([BIN, *map(str, args)], input=stdin, capture_output=True, cwd=cwd, timeout=timeout)


def write(path, text, **kw):
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def findings(path, *extra):
    proc = run("check", "--output-format", "json", "--exit-zero", *extra, path)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def test_exit_codes(tmp_path):
    bad = write(tmp_path / "bad.py", BREAKING)
    clean = write(tmp_path / "clean.py", "import torch\n\ndef f(x):\n    return x + 1\n")
    assert run("check", bad).returncode == 1
    assert run("check", "--exit-zero", bad).returncode == 0
    proc = run("check", clean)
    assert proc.returncode == 0 and b"All checks passed!" in proc.stdout
    assert run("check", "--no-such-flag", clean).returncode == 2
    assert run("check", "--select", "XX9", clean).returncode == 2
    assert run("check", "--output-format", "yaml", clean).returncode == 2


def test_json_is_ruffs_shape_with_character_columns(tmp_path):
    # Non-ASCII before the finding: columns count characters, not bytes.
    src = BREAKING.replace('y = x * 2', 'y = x * 2  # é😀').replace('        print("done")', '        s = "é😀"; print(s)')
    path = write(tmp_path / "m.py", src)
    result = findings(path)
    codes = sorted((f["location"]["row"], f["code"]) for f in result)
    assert codes == [(8, "GM101"), (10, "GM201")]
    f = next(f for f in result if f["code"] == "GM201")
    assert f["location"] == {"row": 10, "column": 19}  # after 8 spaces and `s = "é😀"; `: 18 characters
    assert set(f) >= {"code", "message", "filename", "location", "end_location", "fix", "url", "noqa_row", "cell"}
    assert f["filename"] == str(path.resolve())
    assert f["noqa_row"] == 10
    # `s` is a Python string variable the in-graph print cannot take: no fix, and the reason says so.
    assert f["fix"] is None and "`s`" in f["graphmend"]["no_fix_reason"]
    assert f["graphmend"]["dynamo_registry_id"] == "GB0059"
    g = next(f for f in result if f["code"] == "GM101")
    assert g["fix"]["applicability"] == "safe"
    assert g["fix"]["edits"][0]["content"] == "y = torch.where(y.sum() > 0, y + 1, y)"


def test_sarif_validates_against_the_schema(tmp_path):
    schema_path = ROOT / ".cache" / "sarif-schema-2.1.0.json"
    assert schema_path.exists(), "scripts/setup.sh fetches the SARIF schema"
    path = write(tmp_path / "m.py", BREAKING)
    proc = run("check", "--output-format", "sarif", "--exit-zero", path)
    sarif = json.loads(proc.stdout)
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    jsonschema.validate(sarif, schema)
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"GM101", "GM201"}
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 8


def test_github_and_concise_formats(tmp_path):
    path = write(tmp_path / "m.py", BREAKING)
    gh = run("check", "--output-format", "github", path).stdout.decode().splitlines()
    assert gh[0].startswith("::error title=graphmend (GM101),file=") and ",line=8,col=12," in gh[0]
    concise = run("check", "--output-format", "concise", path).stdout.decode()
    assert f"{path}:8:12: GM101 [*]" in concise


def test_select_ignore_and_statistics(tmp_path):
    path = write(tmp_path / "m.py", BREAKING)
    assert [f["code"] for f in findings(path, "--select", "GM2")] == ["GM201"]
    assert [f["code"] for f in findings(path, "--ignore", "GM201")] == ["GM101"]
    stats = json.loads(run("check", "--statistics", "--output-format", "json", path).stdout)
    assert {s["code"]: s["count"] for s in stats} == {"GM101": 1, "GM201": 1}


def test_pyproject_configuration(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.graphmend]\nignore = ["GM101"]\nper-file-ignores = { "skip_*.py" = ["GM2"] }\n')
    (tmp_path / "pkg").mkdir()
    a = write(tmp_path / "pkg" / "model.py", BREAKING)
    b = write(tmp_path / "pkg" / "skip_me.py", BREAKING)
    assert [f["code"] for f in findings(a)] == ["GM201"]
    assert findings(b) == []
    write(tmp_path / "pyproject.toml", '[tool.graphmend]\nselect = "GM1"\n')
    proc = run("check", a)
    assert proc.returncode == 2 and b"pyproject.toml:2:" in proc.stderr and b"list of strings" in proc.stderr
    write(tmp_path / "pyproject.toml", '[tool.graphmend\nselect = []\n')
    proc = run("check", a)
    assert proc.returncode == 2 and b"pyproject.toml:1:" in proc.stderr


def test_noqa(tmp_path):
    src = BREAKING.replace('print("done")', 'print("done")  # noqa: GM201')
    assert [f["code"] for f in findings(write(tmp_path / "a.py", src))] == ["GM101"]
    src = BREAKING.replace('print("done")', 'print("done")  # noqa')
    assert [f["code"] for f in findings(write(tmp_path / "b.py", src))] == ["GM101"]
    assert findings(write(tmp_path / "c.py", "# graphmend: noqa\n" + BREAKING)) == []


def test_syntax_error_keeps_findings_outside_the_broken_region(tmp_path):
    src = BREAKING + "\n\ndef broken(:\n    pass\n"
    path = write(tmp_path / "m.py", src)
    result = findings(path)
    assert [(f["code"], f["location"]["row"]) for f in result if f["code"]] == [("GM101", 8), ("GM201", 10)]
    errors = [f for f in result if f["code"] is None]
    assert errors and errors[0]["message"].startswith("SyntaxError") and errors[0]["location"]["row"] == 14
    # --fix never touches a file it could not fully read.
    before = path.read_bytes()
    run("check", "--fix", path)
    assert path.read_bytes() == before


def test_bad_bytes_are_reported_with_position_and_others_still_checked(tmp_path):
    write(tmp_path / "a_latin1.py", b"x = 1\ns = '\xe9'\n")
    write(tmp_path / "b_nul.py", b"x = 1\x00\n")
    write(tmp_path / "c_good.py", BREAKING)
    proc = run("check", "--output-format", "concise", tmp_path)
    err = proc.stderr.decode()
    assert "a_latin1.py:2:6: invalid UTF-8 byte 0xE9" in err
    assert "b_nul.py:1:6: file contains a NUL byte" in err
    assert "c_good.py:8:12: GM101" in proc.stdout.decode()
    assert proc.returncode == 2  # a file that could not be checked is an error, as in ruff


def test_missing_paths_and_symlink_loops(tmp_path):
    (tmp_path / "pkg").mkdir()
    write(tmp_path / "pkg" / "m.py", BREAKING)
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    proc = run("check", "--output-format", "concise", tmp_path, tmp_path / "nope", timeout=60)
    assert "nope: no such file or directory" in proc.stderr.decode()
    assert proc.stdout.decode().count("GM101") == 1
    assert proc.returncode == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    path = write(tmp_path / "m.py", BREAKING)
    path.chmod(0)
    proc = run("check", path)
    assert proc.returncode == 2 and b"cannot read file" in proc.stderr


def test_large_and_deep_inputs_do_not_crash(tmp_path):
    body = "".join(f"    y{i} = x * {i}\n" for i in range(5))
    big = "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    def forward(self, x):\n" + body * 140000
    path = write(tmp_path / "big.py", big + "        \n")
    assert path.stat().st_size > 10_000_000
    proc = run("check", "--exit-zero", path, timeout=120)
    assert proc.returncode == 0
    deep = "x = " + "(" * 500 + "1" + ")" * 500 + "\n" + "def f(x):\n" + "".join("    " * (i + 1) + "if x:\n" for i in range(100)) + "    " * 101 + "pass\n"
    proc = run("check", "--exit-zero", write(tmp_path / "deep.py", deep), timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_fix_keeps_crlf_bom_and_mode_and_is_atomic(tmp_path):
    src = "\ufeff" + BREAKING.replace("\n", "\r\n")
    path = write(tmp_path / "m.py", src)
    path.chmod(0o751)
    proc = run("check", "--fix", "--unsafe-fixes", path)
    assert proc.returncode == 0, proc.stdout  # every finding was fixed
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert b"torch.where(y.sum() > 0, y + 1, y)" in data
    assert b"torch._higher_order_ops.print" in data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]  # no temporary files left behind
    again = path.read_bytes()
    run("check", "--fix", path)
    assert path.read_bytes() == again  # idempotent


def test_diff_writes_nothing(tmp_path):
    path = write(tmp_path / "m.py", BREAKING)
    proc = run("check", "--diff", path)
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert out.startswith(f"--- {path}\n+++ {path}\n@@")
    assert "+            y = torch.where" not in out and "+        y = torch.where(y.sum() > 0, y + 1, y)" in out
    assert path.read_text() == BREAKING
    clean = write(tmp_path / "c.py", "x = 1\n")
    assert run("check", "--diff", clean).returncode == 0


def test_stdin(tmp_path):
    proc = run("check", "-", "--stdin-filename", "model.py", "--output-format", "concise", stdin=BREAKING.encode())
    assert b"model.py:8:12: GM101" in proc.stdout
    proc = run("check", "-", "--fix", "--stdin-filename", "model.py", stdin=BREAKING.encode())
    assert b"torch.where(y.sum() > 0, y + 1, y)" in proc.stdout


def test_rule_pages_match_the_metadata(tmp_path):
    proc = run("rule", "--write-docs", tmp_path)
    assert proc.returncode == 0
    committed = ROOT / "docs" / "rules"
    for page in tmp_path.iterdir():
        assert (committed / page.name).read_text() == page.read_text(), f"docs/rules/{page.name} is stale: run make docs"
    text = run("rule", "GM101").stdout.decode()
    assert text.startswith("# GM101 tensor-if") and "GB0170" in text and "Data-dependent branching" in text
    assert run("rule", "GM999").returncode == 2


def test_functions_called_from_compiled_code_in_other_files_are_traced(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    write(pkg / "__init__.py", "")
    write(pkg / "sub" / "__init__.py", "")
    write(pkg / "helpers.py", "import torch\n\n\ndef clamp_if_large(t):\n    if t.abs().max() > 10:\n"
          "        t = t / 10\n    return t\n\n\ndef unused(t):\n    print(t)\n")
    write(pkg / "sub" / "model.py", "import torch\nfrom torch import nn\nfrom ..helpers import clamp_if_large\n\n\n"
          "class Net(nn.Module):\n    def forward(self, x):\n        return clamp_if_large(x * 2)\n")
    result = findings(pkg)
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("helpers.py", 5, "GM101")]
    assert "another workspace file" in result[0]["graphmend"]["related"][0]["message"]
    # Alone, the helper file has no compiled region.
    assert findings(pkg / "helpers.py") == []


def test_decorators_imported_from_other_files_trace_their_wrappers(tmp_path):
    # The shape of transformers' `@dynamic_rope_update` (modeling_rope_utils.py) on Phi-3's rotary forward.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    write(pkg / "__init__.py", "")
    write(pkg / "rope_utils.py", "import torch\n\n\ndef dynamic_rope_update(rope_forward):\n"
          "    print('decorating')  # runs once, eagerly: not traced\n\n"
          "    def update(self, position_ids):\n        seq_len = torch.max(position_ids) + 1\n"
          "        if seq_len > self.original_max:\n            self.inv_freq = self.long_freq\n\n"
          "    def wrapper(self, x, position_ids):\n        update(self, position_ids)\n"
          "        return rope_forward(self, x, position_ids)\n\n    return wrapper\n\n\n"
          "def other_decorator(fn):\n    def wrapper(*args):\n        print('not applied to traced code')\n"
          "        return fn(*args)\n\n    return wrapper\n")
    write(pkg / "model.py", "import torch\nfrom torch import nn\nfrom .rope_utils import dynamic_rope_update\n\n\n"
          "class Rotary(nn.Module):\n    @dynamic_rope_update\n    def forward(self, x, position_ids):\n"
          "        return x * self.inv_freq\n")
    result = findings(pkg)
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("rope_utils.py", 9, "GM101")]
    assert "inside decorator `dynamic_rope_update`" in result[0]["graphmend"]["related"][0]["message"]
    assert findings(pkg / "rope_utils.py") == []


def test_methods_inherited_from_classes_of_other_files_are_traced(tmp_path):
    # transformers' shape: LayoutLMv3Model -> LayoutLMv3PreTrainedModel -> PreTrainedModel (modeling_utils.py,
    # bases nn.Module and ModuleUtilsMixin), whose get_extended_attention_mask warns; gpt2 reads the
    # `loss_function` property of PreTrainedModel, whose getter logs.
    pkg = tmp_path / "pkg"
    (pkg / "models").mkdir(parents=True)
    write(pkg / "__init__.py", "")
    write(pkg / "models" / "__init__.py", "")
    write(pkg / "modeling_utils.py", "import warnings\n\nimport torch\nfrom torch import nn\n\n\n"
          "class ModuleUtilsMixin:\n    def extended_mask(self, mask, device=None):\n"
          "        if device is not None:\n            warnings.warn('deprecated', FutureWarning)\n"
          "        return mask[:, None, None, :]\n\n    def unused(self):\n        print('never called')\n\n\n"
          "class PreTrainedModel(nn.Module, ModuleUtilsMixin):\n    @property\n    def loss_function(self):\n"
          "        print('default loss')\n        return nn.functional.mse_loss\n\n"
          "    @loss_function.setter\n    def loss_function(self, value):\n        print('setter')\n")
    write(pkg / "models" / "modeling_toy.py", "from torch import nn\nfrom ..modeling_utils import PreTrainedModel\n\n\n"
          "class ToyPreTrained(PreTrainedModel):\n    pass\n\n\nclass Toy(ToyPreTrained):\n"
          "    def __init__(self):\n        super().__init__()\n        self.proj = nn.Linear(4, 4)\n\n"
          "    def forward(self, x, mask):\n        m = self.extended_mask(mask, device=x.device)\n"
          "        return self.loss_function(self.proj(x) * m, x)\n")
    result = findings(pkg)
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("modeling_utils.py", 10, "GM204"), ("modeling_utils.py", 20, "GM201")]
    assert "inherited by a class compiled in another workspace file" in result[0]["graphmend"]["related"][0]["message"]
    # alone, the base file has no compiled entry of its own
    assert findings(pkg / "modeling_utils.py") == []


def test_classes_deriving_from_modules_of_other_files_are_modules(tmp_path):
    # kornia's shape: RandomCutMixV2 -> MixAugmentationBaseV2 (mix/base.py) -> _BasicAugmentationBase (base.py,
    # an nn.Module): module-ness crosses two files, so the subclass's forward is an entry.
    pkg = tmp_path / "pkg"
    (pkg / "mix").mkdir(parents=True)
    write(pkg / "__init__.py", "")
    write(pkg / "mix" / "__init__.py", "")
    write(pkg / "base.py", "from torch import nn\n\n\nclass Augmentation(nn.Module):\n"
          "    def forward(self, x):\n        return self.apply(x)\n")
    write(pkg / "mix" / "mixing.py", "from ..base import Augmentation\n\n\nclass MixBase(Augmentation):\n"
          "    def mix(self, x):\n        return x.flip(0)\n")
    write(pkg / "mix" / "cutmix.py", "from .mixing import MixBase\n\n\nclass CutMix(MixBase):\n"
          "    def forward(self, x):\n        if x.sum() > 0:\n            x = self.mix(x)\n        return x\n\n\n"
          "class Plain(object):\n    def forward(self, x):\n        print(x)\n")
    result = findings(pkg)
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("cutmix.py", 6, "GM101")]
    assert "nn.Module subclass `CutMix`" in result[0]["graphmend"]["related"][0]["message"]
    # Without the base files, CutMix cannot be proven a module: nothing is traced.
    assert findings(pkg / "mix" / "cutmix.py") == []


def test_overrides_of_methods_a_base_of_another_file_calls_through_self_are_traced(tmp_path):
    # torchvision's transforms.v2 shape: Transform.forward (_transform.py) calls self.make_params and
    # self.transform; ColorJitter (_color.py) overrides them and never defines forward. A class that only
    # derives from it, in a third file, overrides one of them too.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    write(pkg / "__init__.py", "")
    write(pkg / "_transform.py", "from torch import nn\n\n\nclass Transform(nn.Module):\n"
          "    def forward(self, x):\n        params = self.make_params(x)\n        return self.transform(x, params)\n\n"
          "    def make_params(self, x):\n        return {}\n\n    def transform(self, x, params):\n        return x\n")
    write(pkg / "_color.py", "import torch\nfrom ._transform import Transform\n\n\nclass ColorJitter(Transform):\n"
          "    def make_params(self, x):\n        return {\"b\": self._generate_value(0.5, 1.5)}\n\n"
          "    def _generate_value(self, left, right):\n"
          "        return float(torch.empty(1).uniform_(left, right).item())\n\n"
          "    def helper(self, x):\n        print(x)\n")
    write(pkg / "_more.py", "from ._color import ColorJitter\n\n\nclass Bright(ColorJitter):\n"
          "    def transform(self, x, params):\n        print(params)\n        return x\n")
    result = findings(pkg)
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("_color.py", 10, "GM401"), ("_more.py", 6, "GM201")]
    assert "overrides the `make_params`" in result[0]["graphmend"]["related"][0]["message"]
    # Alone, nothing says what the base's forward calls: ColorJitter's methods are not traced.
    assert findings(pkg / "_color.py") == []


def test_return_kinds_of_functions_of_other_files_type_their_calls(tmp_path):
    # torch_geometric's shape: `from torch_geometric.utils import scatter` (re-exported by utils/__init__.py from
    # _scatter.py, annotated `-> Tensor`), then `int(num_nodes.max())`; kornia's `h, w = infer_bbox_shape(src)`
    # with `-> tuple[Tensor, Tensor]`.
    pkg = tmp_path / "pkg"
    (pkg / "utils").mkdir(parents=True)
    write(pkg / "__init__.py", "")
    write(pkg / "utils" / "__init__.py", "from ._scatter import scatter, shape\n")
    write(pkg / "utils" / "_scatter.py", "from torch import Tensor\n\n\ndef scatter(src: Tensor, index: Tensor) -> Tensor:\n"
          "    return src.new_zeros(3).scatter_add_(0, index, src)\n\n\n"
          "def shape(boxes: Tensor) -> tuple[Tensor, Tensor]:\n    return boxes[:, 0], boxes[:, 1]\n")
    write(pkg / "dense.py", "from torch import Tensor\nfrom pkg.utils import scatter, shape\n\n\n"
          "def dense(batch: Tensor, boxes: Tensor):\n    num = scatter(batch, batch)\n    h, w = shape(boxes)\n"
          "    return int(num.max()), h[0].item()\n")
    result = findings(pkg)
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("dense.py", 8, "GM403"), ("dense.py", 8, "GM401")]
    # The same without the package's __init__.py among the checked files (it is read to find the module).
    assert len(findings(pkg / "dense.py", pkg / "utils" / "_scatter.py")) == 2
    # Alone, nothing says what the helpers return.
    assert findings(pkg / "dense.py") == []


def test_sparse_returns_of_functions_of_other_files_break_where_traced_code_calls_them(tmp_path):
    # torch_geometric's ASAPooling: `S = to_torch_coo_tensor(edge_index, score)` from utils/sparse.py, which binds
    # its result again (`adj = adj._coalesced_(True)`) before returning it.
    pkg = tmp_path / "pkg"
    (pkg / "utils").mkdir(parents=True)
    write(pkg / "__init__.py", "")
    write(pkg / "utils" / "__init__.py", "from .sparse import to_coo\n")
    write(pkg / "utils" / "sparse.py", "import torch\n\n\ndef to_coo(index, value, n: int):\n"
          "    adj = torch.sparse_coo_tensor(index, value, (n, n))\n    adj = adj._coalesced_(True)\n    return adj\n")
    write(pkg / "pool.py", "from torch import nn\nfrom pkg.utils import to_coo\n\n\nclass Pool(nn.Module):\n"
          "    def forward(self, x, index):\n        s = to_coo(index, x[0], 4)\n        return x\n")
    pool = [(f["location"]["row"], f["code"]) for f in findings(pkg) if pathlib.Path(f["filename"]).name == "pool.py"]
    assert pool == [(7, "GM612")]
    # Alone, nothing says what the helper returns.
    assert findings(pkg / "pool.py") == []


def test_disable_aliases_of_other_files_disable_what_they_decorate(tmp_path):
    # timm's shape: layers/typing.py binds `disable_compiler = getattr(getattr(torch, "compiler", None), "disable",
    # None) or nullwrap`, layers/__init__.py re-exports it, and a model decorates a method with it (GB0099 where
    # forward calls it).
    pkg = tmp_path / "pkg"
    (pkg / "layers").mkdir(parents=True)
    write(pkg / "__init__.py", "")
    write(pkg / "layers" / "__init__.py", "from .typing import disable_compiler\n")
    write(pkg / "layers" / "typing.py", "import torch\n\n\ndef nullwrap(fn=None):\n    return fn\n\n\n"
          "disable_compiler = getattr(getattr(torch, \"compiler\", None), \"disable\", None) or nullwrap\n")
    write(pkg / "model.py", "from torch import nn\nfrom pkg.layers import disable_compiler\n\n\n"
          "class Embed(nn.Module):\n    @disable_compiler\n    def resample(self, x):\n        return x * 2\n\n"
          "    def forward(self, x):\n        return self.resample(x)\n")
    result = findings(pkg)
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("model.py", 11, "GM606")]
    # Alone, nothing says what the decorator is.
    assert findings(pkg / "model.py") == []


def test_names_reexported_by_a_package_init_resolve_to_their_module(tmp_path):
    # transformers' shape: `from ...utils import torch_compilable_check`, which utils/__init__.py imports
    # from .import_utils. The __init__.py is read (not run, not checked) to find the defining file.
    pkg = tmp_path / "pkg"
    (pkg / "utils").mkdir(parents=True)
    (pkg / "models").mkdir()
    write(pkg / "__init__.py", "")
    write(pkg / "models" / "__init__.py", "")
    write(pkg / "utils" / "__init__.py", "from .import_utils import (\n    compilable_check,\n)\n"
          "from .import_utils import other as renamed\n")
    write(pkg / "utils" / "import_utils.py", "import torch\n\n\ndef compilable_check(cond):\n"
          "    torch._check_tensor_all(cond)\n\n\ndef other(x):\n    print(x)\n")
    write(pkg / "models" / "modeling_toy.py", "from torch import nn\nfrom ..utils import compilable_check, renamed\n\n\n"
          "class Toy(nn.Module):\n    def forward(self, x):\n        compilable_check(x.sum() > 0)\n"
          "        renamed(x)\n        return x\n")
    result = findings(pkg / "models" / "modeling_toy.py", pkg / "utils" / "import_utils.py")
    assert [(pathlib.Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in result] == [
        ("import_utils.py", 5, "GM406")]


EXPORTED = """import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        print("runs under export")
        return x


def export():
    return torch.export.export(Model(), (torch.randn(3),))
"""


ASSERTED = """import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        assert x.sum() > 0, f"bad {x.shape}"
        return x + 1


def export():
    return torch.export.export(Model(), (torch.ones(3),))
"""


def assert_export_fails(path):
    """torch.export of the file's Model() on torch.ones(3) fails on a data-dependent value, non-strict (its
    default) and strict."""
    torch = pytest.importorskip("torch")
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for strict in (False, True):
        with pytest.raises(Exception, match="data-dependent|Data-dependent"):
            torch.export.export(module.Model(), (torch.ones(3),), strict=strict)


def test_rules_that_say_export_fails_are_the_data_dependent_branches():
    # Metadata drives the message: every rule predicting Dynamo's "Data-dependent branching" (GB0170) says
    # torch.export fails there, and no other rule does.
    rules = json.loads(subprocess.run([BIN, "rule", "--all", "--output-format", "json"], check=True,
                                      capture_output=True, text=True).stdout)
    assert {r["code"] for r in rules if r["export_fails"]} == {
        r["code"] for r in rules if r["dynamo_registry_id"] == "GB0170"}


def test_an_assert_with_a_dynamic_message_fails_under_torch_export(tmp_path):
    path = write(tmp_path / "asserted.py", ASSERTED)
    (finding,) = findings(path)
    assert finding["code"] == "GM302" and "torch.export.export, called in this file, fails here" in finding["message"]
    assert_export_fails(path)


def test_data_dependent_branches_say_torch_export_fails_there(tmp_path):
    path = write(tmp_path / "exported.py", EXPORTED)
    by_code = {f["code"]: f["message"] for f in findings(path)}
    assert "torch.export.export, called in this file, fails here with an error" in by_code["GM101"]
    assert "torch.export" not in by_code["GM201"]  # a print runs under export
    # without the export call the message is about the graph break only
    plain = write(tmp_path / "plain.py", EXPORTED.replace("torch.export.export(Model(), (torch.randn(3),))", "Model()"))
    assert all("torch.export" not in f["message"] for f in findings(plain))
    # and torch.export does fail there (non-strict, its default, and strict)
    assert_export_fails(path)
