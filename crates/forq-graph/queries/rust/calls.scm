; Call sites in Rust: functions, methods and paths (`a::b()`).
(call_expression function: (identifier) @callee) @call
(call_expression function: (field_expression field: (field_identifier) @callee)) @call
(call_expression function: (scoped_identifier name: (identifier) @callee)) @call
(call_expression function: (generic_function function: (identifier) @callee)) @call
