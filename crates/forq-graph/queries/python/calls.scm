; Call sites in Python: @callee is the called name (a bare name or the last
; part of an attribute), @receiver the object an attribute call goes through.
(call function: (identifier) @callee) @call
(call function: (attribute object: (_) @receiver attribute: (identifier) @callee)) @call
