; Definitions in Go. A method's container is its receiver's type
; (@container), since Go methods sit outside their type.
(function_declaration name: (identifier) @name) @def.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @container
             (pointer_type (type_identifier) @container)
             (generic_type type: (type_identifier) @container)
             (pointer_type (generic_type type: (type_identifier) @container))]))
  name: (field_identifier) @name) @def.method
(type_declaration (type_spec name: (type_identifier) @name type: (struct_type))) @def.struct
(type_declaration (type_spec name: (type_identifier) @name type: (interface_type))) @def.interface
(type_declaration (type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (function_type) (map_type) (slice_type) (array_type) (pointer_type) (channel_type) (generic_type)])) @def.type
(source_file (const_declaration (const_spec name: (identifier) @name) @def.constant))
