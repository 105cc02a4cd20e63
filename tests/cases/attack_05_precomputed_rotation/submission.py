# docs/threats.md 5: a harness that rotates a few fixed input sets in order can be beaten by computing the answers
# for all of them once and returning them in turn. This submission computes honestly while it is checked
# (the first five calls here), then, in warm-up, records the outputs of the first calls and replays them in
# rotation order. The harness draws each rep's input set at random and scales its values by a random factor,
# and re-checks a random sample of timed outputs against the reference on exactly those inputs.
import torch
import torch.nn as nn

CHECKED_CALLS = 5
ROTATION = 3


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.answers = []

    def forward(self, a, b):
        self.calls += 1
        if self.calls <= CHECKED_CALLS + ROTATION:
            out = torch.relu(a + b)
            if self.calls > CHECKED_CALLS:
                self.answers.append(out.clone())
            return out
        return self.answers[self.calls % ROTATION]
