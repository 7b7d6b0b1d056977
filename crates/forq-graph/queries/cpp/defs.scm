; Definitions in C++. A method defined outside its class (`void Foo::bar()`)
; takes its class from the qualified name (@container). The function's
; declarator may sit under pointer and reference declarators (`T *f()`,
; `T &C::f()`).
(function_definition
  declarator: [
    (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name)] @name)
    (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name))
    (reference_declarator (function_declarator declarator: [(identifier) (field_identifier)] @name))
  ]) @def.function
(function_definition
  declarator: [
    (function_declarator
      declarator: (qualified_identifier scope: [(namespace_identifier) (template_type)] @container name: [(identifier) (destructor_name) (operator_name)] @name))
    (pointer_declarator
      declarator: (function_declarator
        declarator: (qualified_identifier scope: [(namespace_identifier) (template_type)] @container name: (identifier) @name)))
    (reference_declarator
      (function_declarator
        declarator: (qualified_identifier scope: [(namespace_identifier) (template_type)] @container name: (identifier) @name)))
  ]) @def.method
(field_declaration
  declarator: (function_declarator declarator: (field_identifier) @name)) @def.method
(declaration
  declarator: (function_declarator declarator: (identifier) @name)) @def.function
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(union_specifier name: (type_identifier) @name body: (_)) @def.struct
(enum_specifier name: (type_identifier) @name body: (_)) @def.enum
(namespace_definition name: (namespace_identifier) @name) @def.module
(type_definition declarator: (type_identifier) @name) @def.type
(alias_declaration name: (type_identifier) @name) @def.type
(preproc_def name: (identifier) @name) @def.macro
(preproc_function_def name: (identifier) @name) @def.macro
