; Call sites in C++: free functions, members, qualified names.
(call_expression function: (identifier) @callee) @call
(call_expression function: (field_expression field: (field_identifier) @callee)) @call
(call_expression function: (qualified_identifier name: (identifier) @callee)) @call
