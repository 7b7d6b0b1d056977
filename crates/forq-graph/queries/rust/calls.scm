; Call sites in Rust: functions, methods (`x.f()`, @receiver `x`) and paths
; (`T::f()`, @receiver `T`).
(call_expression function: (identifier) @callee) @call
(call_expression function: (field_expression value: (_) @receiver field: (field_identifier) @callee)) @call
(call_expression function: (scoped_identifier path: (_) @receiver name: (identifier) @callee)) @call
(call_expression function: (generic_function function: (identifier) @callee)) @call
(call_expression function: (generic_function function: (scoped_identifier path: (_) @receiver name: (identifier) @callee))) @call
(macro_invocation macro: (identifier) @callee) @call
