"""Per-session limits of the env server: a token bucket for the message rate."""

from __future__ import annotations

import time

__all__ = ["TokenBucket"]


class TokenBucket:
    """``rate`` events per second on average, up to ``burst`` at once.

    Example:
        >>> bucket = TokenBucket(rate=1.0, burst=2)
        >>> bucket.take(), bucket.take(), bucket.take() > 0
        (0.0, 0.0, True)
    """

    __slots__ = ("rate", "burst", "tokens", "stamp")

    def __init__(self, rate: float, burst: int) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"need rate > 0 and burst >= 1, got rate={rate}, burst={burst}")
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.stamp = time.monotonic()

    def take(self) -> float:
        """Take one token: 0.0 when there was one, else the seconds until one is due (nothing is taken)."""
        now = time.monotonic()
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate
