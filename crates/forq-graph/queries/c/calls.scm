; Call sites in C: direct calls, and calls through a struct field (@receiver
; the struct expression).
(call_expression function: (identifier) @callee) @call
(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @callee)) @call
