; Call sites in Java: method invocations and constructors.
(method_invocation name: (identifier) @callee) @call
(object_creation_expression type: (type_identifier) @callee) @call
