; Call sites in Python: @call is the call, @callee the called name (a bare
; name or the last part of an attribute).
(call function: (identifier) @callee) @call
(call function: (attribute attribute: (identifier) @callee)) @call
