# Environment leakage: print every variable name the job sees.
import os
for k in sorted(os.environ):
    print("ENV %s=%s" % (k, os.environ[k][:80]))
