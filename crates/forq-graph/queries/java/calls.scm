; Call sites in Java: method invocations (@receiver the object or class) and `new`.
(method_invocation !object name: (identifier) @callee) @call
(method_invocation object: (_) @receiver name: (identifier) @callee) @call
(object_creation_expression type: (type_identifier) @callee) @call
