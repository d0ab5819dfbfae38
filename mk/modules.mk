# The shape of src/ (tests/architecture/check_modules.py, docs/architecture.md): no circle
# between modules and no arrow from a lower floor up, over crate::, super:: and self::
# paths. Its self-test plants a circle and an upward arrow in a copy of src/ and must see
# both caught. Python's standard library only; seconds.
.PHONY: test-modules
SUITES += test-modules

test-modules:
	$(call timed,2,$(PYTHON) tests/architecture/check_modules.py --self-test)
