import Counter from '../counter';

export default function Checkout() {
  return (
    <>
      <h1>Checkout</h1>
      <Counter id="pay" trigger="checkout_terms" label="Pay" done="Paid" />
    </>
  );
}
