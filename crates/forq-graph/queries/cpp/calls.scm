; Call sites in C++: functions, members (@receiver the object) and
; qualified names (`A::f()`, @receiver the scope).
(call_expression function: (identifier) @callee) @call
(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @callee)) @call
(call_expression function: (qualified_identifier scope: (_) @receiver name: (identifier) @callee)) @call
(call_expression function: (template_function name: (identifier) @callee)) @call
(new_expression type: (type_identifier) @callee) @call
