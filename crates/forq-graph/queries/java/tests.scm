; JUnit 4/5 and TestNG: a method annotated @Test (or a JUnit 5 variant).
(method_declaration
  (modifiers [(marker_annotation name: (identifier) @ann) (annotation name: (identifier) @ann)])
  name: (identifier) @name
  (#match? @ann "^(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)$")) @test
