; Definitions in Python: each match gives the definition node (@def.<kind>)
; and its name (@name). Containers come from nesting, not from the query.
(class_definition
  name: (identifier) @name) @def.class

(function_definition
  name: (identifier) @name) @def.function

; Module-level constants: NAME = ... with an upper-case name.
(module
  (expression_statement
    (assignment
      left: (identifier) @name
      (#match? @name "^[A-Z][A-Z0-9_]*$"))) @def.constant)
