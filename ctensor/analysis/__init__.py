"""Program analyses.  `validity`: is a continuous einsum valid under the piecewise-constant
semantics (continuous paper §4.3)?  `check(text, **tensors)` answers without compiling."""
from .validity import Verdict, check, verdict_cache

__all__ = ["Verdict", "check", "verdict_cache"]
