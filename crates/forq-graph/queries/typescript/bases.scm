; `extends` and `implements`: @def the class or interface, @base a parent.
(class_declaration (class_heritage (extends_clause value: (identifier) @base))) @def
(class_declaration (class_heritage (implements_clause (type_identifier) @base))) @def
(abstract_class_declaration (class_heritage (extends_clause value: (identifier) @base))) @def
(interface_declaration (extends_type_clause (type_identifier) @base)) @def
