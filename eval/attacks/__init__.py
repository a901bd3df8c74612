"""Attacks of one tenant on the others' private values, through what the engine shares.

dictionary and token-by-token extension attacks read the hit count or the TTFT (`oracles`);
`direct` is the first-generation name-slot prober; `campaign` runs them all on fresh engines.
"""

from eval.attacks.campaign import AttackSettings, SystemAttacks, attack_system
from eval.attacks.direct import DirectLeakage, probe_direct
from eval.attacks.outcome import AttackOutcome

__all__ = ["AttackOutcome", "AttackSettings", "DirectLeakage", "SystemAttacks", "attack_system",
           "probe_direct"]
