; extends and implements: @def the type, @base a parent.
(class_declaration superclass: (superclass (type_identifier) @base)) @def
(class_declaration superclass: (superclass (generic_type (type_identifier) @base))) @def
(class_declaration interfaces: (super_interfaces (type_list (type_identifier) @base))) @def
(class_declaration interfaces: (super_interfaces (type_list (generic_type (type_identifier) @base)))) @def
(interface_declaration (extends_interfaces (type_list (type_identifier) @base))) @def
