# docs/threats.md 15: predicts the judge's inputs instead of computing. The weight seed the harness uses is
# readable (torch.initial_seed()), the seed derivation is public, and the problem's get_inputs is known, so
# the public trials' inputs can be regenerated at load time and their answers prepared; forward() then
# returns a prepared answer without computing. Secret trials mix in seed material the child never sees.
import hashlib

import torch
import torch.nn as nn

N = 1024
PUBLIC_TRIALS = 8


def derive_seed(seed, kind, index, secret=""):
    return int(hashlib.sha256(f"{secret}|{seed}|{kind}|{index}".encode()).hexdigest()[:15], 16)


def predicted(seed):
    answers = []
    for i in range(PUBLIC_TRIALS):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "trial", i))
            a, b = torch.randn(N, N), torch.randn(N, N)
        answers.append((a[0, :4].clone(), torch.relu(a + b)))
    return answers


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.answers = predicted(torch.initial_seed())

    def forward(self, a, b):
        for key, answer in self.answers:
            if torch.equal(key, a[0, :4]):
                return answer.clone()
        return self.answers[0][1].clone()  # unpredicted inputs: bet on the first prepared answer
