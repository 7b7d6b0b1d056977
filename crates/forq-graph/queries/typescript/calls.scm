; Call sites: functions, methods (@receiver the object) and `new`.
(call_expression function: (identifier) @callee) @call
(call_expression function: (member_expression object: (_) @receiver property: (property_identifier) @callee)) @call
(new_expression constructor: (identifier) @callee) @call
