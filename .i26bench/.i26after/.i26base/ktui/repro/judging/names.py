"""The verdict's words and limits: verdict names, failure kinds that say nothing about the kernel,
tolerances, and what a row's values are. No imports: the data (:mod:`.model`) and the formatter
(:mod:`.text`) both read them, and neither imports the other's module for them."""

REPRODUCED = "reproduced"
SAME_FAILURE = "reproduced: fails the same way"
DIFFERS = "differs"
UNIT_ERROR = "unit error suspected"
CORRECTNESS_DISAGREES = "correctness disagrees"
NOT_REPRODUCIBLE = "not reproducible"
SUSPICIOUS = "suspicious"
NOT_RECORDED = "not recorded"
SHOWN_ONLY = "shown only"
CANCELLED = "cancelled"
#: the kernel could not be judged on this machine (no GPU, no reference, no toolchain, ktui's own
#: time budget ran out): a fact about the machine, never about the kernel
NOT_JUDGED = "not judged here"
#: the judge's side broke (the reference failed, the worker died, a protocol error)
HARNESS_ERROR = "harness error"
#: verdicts that say nothing about the kernel: counted apart, never as failures or claims
UNJUDGED = (NOT_JUDGED, HARNESS_ERROR, CANCELLED)

SEVERITY = {HARNESS_ERROR: 0, NOT_JUDGED: 0, NOT_REPRODUCIBLE: 6, CORRECTNESS_DISAGREES: 5, SUSPICIOUS: 4, UNIT_ERROR: 3, DIFFERS: 2,
            SAME_FAILURE: 1, REPRODUCED: 0}
GOOD = (REPRODUCED, SAME_FAILURE)
#: failures that say nothing about the kernel: it could not be tested here
CANNOT_TEST = {"environment", "unsupported", "no_reference", "reference_error", "worker_error", "harness_error",
               "no_code"}
#: failures of the judge's own side: a kernel with honesty findings may have caused them
JUDGE_SIDE = {"reference_error", "worker_error", "harness_error"}
TIME_TOL = 0.10  # relative, widened to 2x the measured coefficient of variation...
MAX_TIME_TOL = 0.30  # ...but never beyond this
RATIO_TOL = 0.10
MEM_TOL = 0.10
UNIT_LO, UNIT_HI = 10 ** 2.5, 10 ** 3.5  # "~1000x"
US = "μs"

# what a row's values are, for the formatter
VALUE, TIME, BUILD, CORRECTNESS, HELD_OUT = "value", "time", "build", "correctness", "held_out"
