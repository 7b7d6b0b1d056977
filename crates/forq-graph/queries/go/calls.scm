; Call sites in Go: functions, and selectors (`pkg.F()`, `v.M()`) with the
; operand as @receiver.
(call_expression function: (identifier) @callee) @call
(call_expression function: (selector_expression operand: (_) @receiver field: (field_identifier) @callee)) @call
