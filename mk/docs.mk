# The docs' links (tests/docs/check_links.py, docs/tests.md): every relative link and
# #anchor of README.md, docs/*.md and bindings/*/README.md resolves and every src/ path
# they name exists, so a moved file or heading fails here rather than in a reader's hands.
# Its self-test plants a broken link, a broken anchor and a missing src path in a copy of
# the pages and must see each caught. Python's standard library only; seconds.
.PHONY: test-docs
SUITES += test-docs

test-docs:
	$(call timed,2,$(PYTHON) tests/docs/check_links.py --self-test)
