"""One case's outcome: its figures, whether its fault really happened mid-run, and its verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from chaos.smoke import SmokeFigures


@dataclass
class CaseResult:
    case: str
    figures: SmokeFigures
    #: seconds from the fault to the mesh being whole again (every record acknowledged before
    #: the fault seen at the output)
    recover_s: float | None
    #: the fault came after the first output and before the last input (else it tested nothing)
    mid_run: bool
    #: the most duplicates the case's guarantee allows
    duplicates_allowed: int
    offset_regressions: int
    notes: list[str] = field(default_factory=list)
    #: what the case's own checks found wrong (beyond the smoke figures)
    failures: list[str] = field(default_factory=list)
    #: why the case could not run here (it needs what this machine does not give, e.g. root)
    skipped: str | None = None

    @classmethod
    def skip(cls, case: str, why: str) -> CaseResult:
        return cls(case, SmokeFigures(0, 0, 0, 0, 0, 0), None, False, 0, 0, skipped=why)

    @property
    def problems(self) -> list[str]:
        if self.skipped:
            return []
        found = []
        if not self.mid_run:
            found.append("the fault did not happen mid-run")
        if self.figures.lost:
            found.append(f"{self.figures.lost} acknowledged record(s) lost")
        if self.figures.duplicated > self.duplicates_allowed:
            found.append(f"{self.figures.duplicated} duplicates, more than the "
                         f"{self.duplicates_allowed} allowed")  # fmt: skip
        if self.figures.out_of_order:
            found.append(f"{self.figures.out_of_order} record(s) out of order within a key")
        if self.offset_regressions:
            found.append(f"committed offsets went backwards {self.offset_regressions} time(s)")
        if self.figures.acknowledged < self.figures.sent:
            found.append(f"{self.figures.sent - self.figures.acknowledged} sent, never "
                         "acknowledged by the broker")  # fmt: skip
        return found + self.failures

    @property
    def passed(self) -> bool:
        return not self.problems

    def line(self) -> str:
        if self.skipped:
            return f"{self.case:<28} SKIP: {self.skipped}"
        f = self.figures
        recover = f"{self.recover_s:.1f} s" if self.recover_s is not None else "-"
        verdict = "PASS" if self.passed else "FAIL: " + "; ".join(self.problems)
        text = (f"{self.case:<28} sent {f.sent:>7}  acked {f.acknowledged:>7}  seen {f.seen:>7}  "
                f"lost {f.lost:>3}  dup {f.duplicated:>5} (<= {self.duplicates_allowed})  "
                f"reordered {f.out_of_order}  "
                + (f"dead letters {f.dead_lettered}  " if f.dead_lettered else "")
                + f"recovered in {recover}  {verdict}")  # fmt: skip
        return text + "".join(f"\n    {note}" for note in self.notes)
