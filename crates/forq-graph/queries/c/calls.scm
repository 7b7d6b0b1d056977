; Call sites in C.
(call_expression function: (identifier) @callee) @call
