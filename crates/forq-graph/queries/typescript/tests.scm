; describe/it/test blocks (mocha, jest, vitest, jasmine, node:test): @name
; is the title, @test the whole call.
(call_expression
  function: [(identifier) @fn (member_expression object: (identifier) @fn)]
  arguments: (arguments . [(string (string_fragment) @name) (template_string) @name])
  (#match? @fn "^(describe|it|test|context|suite|specify)$")) @test
