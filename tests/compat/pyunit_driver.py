# pyunit_driver.py - run CPython regression test modules (or single test
# ids) with unittest and print one line per test: "OUTCOME <id> <result>",
# result one of ok, FAIL, ERROR, skip, xfail, xpass. Failures add a line
# "DETAIL <id> <last line of the traceback>". The same file runs inside a
# job and outside it (tests/compat/compat.py compares the two).
#
#   python3 pyunit_driver.py test_os test_pwd
#   python3 pyunit_driver.py test.test_os.StatAttributeTests.test_stat_attributes
import io
import sys
import unittest

outcomes, details = {}, {}


class Result(unittest.TextTestResult):
    def _set(self, test, what, err=None):
        tid = test.id()
        # A subtest failure marks its test; a later success must not undo it.
        if outcomes.get(tid) in ("FAIL", "ERROR") and what == "ok":
            return
        outcomes[tid] = what
        if err is not None:
            text = self._exc_info_to_string(err, test).strip().splitlines()
            details[tid] = text[-1][:200] if text else "?"

    def addSuccess(self, test):
        super().addSuccess(test)
        self._set(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "FAIL", err)

    def addError(self, test, err):
        super().addError(test, err)
        # errors in setUpClass/setUpModule come with a placeholder test
        self._set(test, "ERROR", err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "FAIL" if issubclass(err[0], test.failureException) else "ERROR"
            self._set(test, kind, err)


def main(names):
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite()
    for name in names:
        full = name if name.startswith("test.") else "test." + name
        try:
            suite.addTest(loader.loadTestsFromName(full))
        except Exception as e:  # an import failure is an outcome too
            outcomes[full] = "ERROR"
            details[full] = "import: %r" % (e,)
    log = open("pyunit-%s.log" % names[0].split(".")[-1][:40], "w")
    unittest.TextTestRunner(stream=log, verbosity=2, resultclass=Result).run(suite)
    for tid in sorted(outcomes):
        print("OUTCOME", tid, outcomes[tid])
        if tid in details:
            print("DETAIL", tid, details[tid])


if __name__ == "__main__":
    sys.stdout = io.TextIOWrapper(sys.stdout.buffer, line_buffering=True)
    main(sys.argv[1:])
