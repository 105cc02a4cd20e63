# docs/threats.md 20 (and a clever 7): every timed rep gets fresh values (an input set scaled by a random factor),
# which defeats plain caches. This one knows that matmul is linear in each input: it recognises an input as a
# scaled copy of one it has seen, and returns the cached product times the two scales, which is right to
# fp32 accuracy and costs one elementwise pass instead of 137 GFLOP. Only the roofline floor can tell: no
# kernel can do this problem's FLOPs that fast, so the absurd time is flagged instead of ranked.
import torch
import torch.nn as nn

PROBES = 8


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = []  # (probe values of A and B, A @ B)
        self.index = None

    def probes(self, A, B):
        """A few values of each input, in one small device-to-host copy."""
        if self.index is None:
            n = A.numel()
            self.index = torch.tensor([(i * 7919 + 13) % n for i in range(PROBES)], device=A.device)
        both = torch.cat([A.reshape(-1)[self.index], B.reshape(-1)[self.index]])
        return both.double().tolist()

    @staticmethod
    def scale(now, then):
        """The factor that turns `then` into `now`, if there is one."""
        if any(t == 0.0 for t in then):
            return None
        ratios = [x / t for x, t in zip(now, then)]
        return ratios[0] if all(abs(r - ratios[0]) <= 1e-6 * abs(ratios[0]) for r in ratios) else None

    def forward(self, A, B):
        probes = self.probes(A, B)
        for seen, product in self.seen:
            sa, sb = self.scale(probes[:PROBES], seen[:PROBES]), self.scale(probes[PROBES:], seen[PROBES:])
            if sa is not None and sb is not None:
                return product * (sa * sb)
        product = torch.matmul(A, B)
        self.seen.append((probes, product))
        return product
