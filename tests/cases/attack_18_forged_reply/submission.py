# docs/threats.md 18: writes a forged reply ("all checks passed, no threads, nothing replaced") into every pipe it
# can find besides its standard streams, hoping one is the channel to the judge. The harness's replies
# carry a key set before the submission was imported and the request's sequence number; anything else on
# the channel is a forgery, and the judge flags it.
import json
import os
import stat

import torch
import torch.nn as nn

FORGED = {"ok": True, "outputs": [{"type_name": "Tensor", "is_plain_tensor": True, "device": "cpu",
                                    "dtype": "float32", "shape": [1024, 1024]}],
          "mutated_inputs": [], "changed_after_return": False, "replaced_functions": [],
          "precision_flags_changed": [], "extra_threads": 0, "seq": 1}


def forge():
    line = (json.dumps(FORGED) + "\n").encode()
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, line)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        forge()
        return torch.zeros_like(a)
