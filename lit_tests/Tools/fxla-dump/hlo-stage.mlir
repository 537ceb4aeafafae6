// RUN: fxla-dump %S/../../../examples/models.py:mlp --stage hlo | FileCheck %s

// XLA's optimised HLO without the FileNames/FunctionNames/FileLocations/StackFrames tables XLA prints after
// the module header: each instruction names its frame's source line instead of a stack_frame_id.
// CHECK:       HloModule jit_fxla_main
// CHECK-NOT:   FileNames
// CHECK-NOT:   FunctionNames
// CHECK-NOT:   FileLocations
// CHECK-NOT:   StackFrames
// CHECK-NOT:   stack_frame_id
// CHECK:       metadata={op_name="{{[^"]*}}fc1" source_file="{{.*}}examples/models.py" source_line=23}
// CHECK-NOT:   stack_frame_id
// CHECK:       ENTRY
// CHECK-NOT:   stack_frame_id
// CHECK:       ROOT
