# Looks for the service's data dir from where its work dir sits (DATA/work/job-...): the database file and
# a header the harness planted there, and other jobs' builds beside its own in the compile cache (the
# harness plants one). It looks in Python at import time, in its C++ source at compile time (#include of
# the planted header where __has_include finds it, __has_include of the others), and again in forward().
# Finding anything makes forward() return wrong values, so `correct` means nothing was found.
import os
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DATA = Path.cwd().parent.parent
OWN_BUILD = Path(os.environ["TORCH_EXTENSIONS_DIR"]).parent
TARGETS = [DATA / "kernelgrade.db", DATA / "secrets.h", OWN_BUILD.parent / "kg-other-tenant" / "ext" / "other_kernel.h"]


def found_in_python():
    if any(p.exists() for p in TARGETS):
        return True
    try:
        others = [p for p in OWN_BUILD.parent.iterdir() if p.name != OWN_BUILD.name]
        extra = [p for p in DATA.iterdir() if p.name not in ("work", "cache")]
    except OSError:
        return False
    return bool(others or extra)


FOUND_AT_IMPORT = found_in_python()
checks = "\n".join(f'#if __has_include("{p}")\n#define KG_FOUND 1\n#endif' for p in TARGETS)
source = f"""
#include <torch/extension.h>
#if __has_include("{DATA / 'secrets.h'}")
#include "{DATA / 'secrets.h'}"
#endif
{checks}
#if defined(KG_DEPLOYMENT_SECRET) && !defined(KG_FOUND)
#define KG_FOUND 1
#endif
#ifndef KG_FOUND
#define KG_FOUND 0
#endif
bool found_at_build() {{ return KG_FOUND; }}
"""
ext = load_inline(name="kg_case_reads_data_dir", cpp_sources=source, functions=["found_at_build"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.relu(a + b)
        found = FOUND_AT_IMPORT or ext.found_at_build() or found_in_python()
        return out + 5.0 if found else out
