; Check's START_TEST(name) and functions named test_* (Unity, cmocka, CUnit
; and hand-rolled runners), which the code keeps to test files.
(function_definition
  declarator: (function_declarator
    declarator: (identifier) @macro
    parameters: (parameter_list) @name)
  (#match? @macro "^(START_TEST|TEST|TEST_CASE|CTEST|CTEST2)$")) @test
(function_definition
  declarator: (function_declarator declarator: (identifier) @name (#match? @name "^test_?[A-Za-z0-9_]*$"))) @test
