-- RL.ALL reference script: several rules, all or nothing, decided as COMMANDS.md and
-- store.DoAll say.
--
-- KEYS    = the rules' keys, in rule order (each rule's own KEYS[1])
-- ARGV    = peek (1 = PEEK, 0 = not), then for each rule its kind ('rl.fixed', 'rl.slide',
--           'rl.log', 'rl.token', 'rl.gcra' or 'rl.leaky') and that kind's script's ARGV
--           without now_us, its peek 0 (lua.Args), then [now_us]
-- Returns   {allowed, {rule 1's five integers}, {rule 2's}, ...}: allowed is 1 if every
--           rule admits. Each rule's five are its consuming answer when all admit and not
--           PEEK; else what that rule alone answers with PEEK, and nothing is written.
-- now_us    tests only: replaces Redis TIME, for every rule
--
-- lua.go puts before this part one local function per kind, rule_fixed ... rule_leaky:
-- that kind's whole script (common.lua and its body), taking KEYS and ARGV as arguments.
local rules = {
  ['rl.fixed'] = {run = rule_fixed, argc = 4},
  ['rl.slide'] = {run = rule_slide, argc = 4},
  ['rl.log'] = {run = rule_log, argc = 4},
  ['rl.token'] = {run = rule_token, argc = 5},
  ['rl.gcra'] = {run = rule_gcra, argc = 5},
  ['rl.leaky'] = {run = rule_leaky, argc = 5},
}

-- Read each rule's part of ARGV; what is left after the last rule is now_us.
local peek = ARGV[1] == '1'
local calls, seen = {}, {}
local at = 2
for i, key in ipairs(KEYS) do
  if seen[key] then return redis.error_reply('ERR RL.ALL names the same key in two rules') end
  seen[key] = true
  local rule = rules[ARGV[at]]
  if not rule then return redis.error_reply('ERR unknown rule kind in RL.ALL script') end
  calls[i] = {run = rule.run, args = {unpack(ARGV, at + 1, at + rule.argc)}}
  at = at + 1 + rule.argc
end
local now_us = ARGV[at]

-- pass runs every rule, as PEEK (peek_flag '1') or for real ('0'), and returns their
-- answers, or the first error (WRONGTYPE) as the script's reply.
local function pass(peek_flag)
  local answers = {}
  for i, call in ipairs(calls) do
    local argv = {unpack(call.args)}
    argv[4] = peek_flag
    argv[#call.args + 1] = now_us
    local answer = call.run({KEYS[i]}, argv)
    if answer.err then return nil, answer end
    answers[i] = answer
  end
  return answers
end

-- First every rule decides as PEEK: nothing is written unless all admit.
local answers, err = pass('1')
if not answers then return err end
local allowed = 1
for _, answer in ipairs(answers) do
  if answer[1] ~= 1 then allowed = 0 end
end

-- Then, if all admit and this is no PEEK, every rule runs again for real. Under now_us
-- that is the same moment; without it each rule reads TIME again, a later moment, and
-- admission only improves with time (windows pass, buckets refill, tat falls behind),
-- while nothing else ran in between: a script is atomic. So every rule admits again
-- and consumes.
if allowed == 1 and not peek then
  answers, err = pass('0')
  if not answers then return err end
end
return {allowed, unpack(answers)}
