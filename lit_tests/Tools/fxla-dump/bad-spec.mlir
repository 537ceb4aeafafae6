// RUN: not fxla-dump %S/no-such-model.py:mlp 2>&1 | FileCheck %s

// A bad model spec is reported as an fxla-dump error with a fix, not a traceback.
// CHECK-NOT:  Traceback
// CHECK:      fxla-dump: error: no such file: '{{.*}}no-such-model.py'
// CHECK-NEXT: fix: give the path of the Python file defining 'mlp'
// CHECK-NOT:  Traceback
