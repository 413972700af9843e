import assert from "node:assert/strict";
import { test } from "node:test";
import { RestartBudget } from "../../src/core/restartBudget";

test("a dying server is restarted a few times, then left off", () => {
  const budget = new RestartBudget(3, 60_000);
  assert.deepEqual([0, 1, 2, 3, 4].map((t) => budget.take(t * 1000)), [true, true, true, false, false]);
});

test("restarts older than the window no longer count", () => {
  const budget = new RestartBudget(2, 60_000);
  assert.equal(budget.take(0), true);
  assert.equal(budget.take(1_000), true);
  assert.equal(budget.take(2_000), false);
  assert.equal(budget.take(61_500), true);
});

test("a manual restart gives the full budget back", () => {
  const budget = new RestartBudget(1, 60_000);
  budget.take(0);
  assert.equal(budget.take(1), false);
  budget.reset();
  assert.equal(budget.take(2), true);
});
