; Definitions JavaScript and TypeScript share (appended to each one's
; defs.scm): functions and objects bound by assignment.

; Functions bound other ways: a named function expression, an assignment
; (`getTag = function ...`), an immediately invoked factory
; (`var f = (function () { ... }())`), and methods attached to an object
; (`Hash.prototype.clear = hashClear`, `obj.run = () => ...`) or written
; in an object literal (`{ run: function () {} }`).
(function_expression name: (identifier) @name) @def.function
(expression_statement
  (assignment_expression
    left: (identifier) @name
    right: [(function_expression) (arrow_function)])) @def.function
(variable_declarator
  name: (identifier) @name
  value: (parenthesized_expression (call_expression function: (function_expression)))) @def.function
(variable_declarator
  name: (identifier) @name
  value: (call_expression function: (parenthesized_expression (function_expression)))) @def.function
(expression_statement
  (assignment_expression
    left: (member_expression
      object: (member_expression
        object: (identifier) @container
        property: (property_identifier) @_proto)
      property: (property_identifier) @name)
    right: [(function_expression) (arrow_function) (identifier) (member_expression) (assignment_expression)])
  (#eq? @_proto "prototype")) @def.method
(expression_statement
  (assignment_expression
    left: (member_expression
      object: (identifier) @container
      property: (property_identifier) @name)
    right: [(function_expression) (arrow_function)])) @def.method
(pair
  key: [(property_identifier) @name (string (string_fragment) @name)]
  value: [(function_expression) (arrow_function)]) @def.method

; A namespace object: `var utils = { ... }`.
(variable_declarator name: (identifier) @name value: (object)) @def.object
; ... or attached to another: `module.exports = { ... }`, `this.cache = { ... }`.
(expression_statement
  (assignment_expression
    left: (member_expression property: (property_identifier) @name)
    right: (object))) @def.object
