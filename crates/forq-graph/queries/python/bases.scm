; Base classes: @def is the class, @base a base's name.
(class_definition superclasses: (argument_list (identifier) @base)) @def
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @base))) @def
